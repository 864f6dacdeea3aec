package main

import (
	"strings"
	"testing"
)

// cloudEnv are the variables the cloud flags read; each test starts with all of them empty (unset).
var cloudEnv = []string{"CLOUD_PROVIDER", "AWS_REGION", "INTERRUPTION_QUEUE", "CLUSTER_NAME", "CLUSTER_ENDPOINT",
	"CLUSTER_CA_BUNDLE", "CLUSTER_CIDR", "KUBERNETES_VERSION", "VM_MEMORY_OVERHEAD_PERCENT", "RESERVED_ENIS", "ISOLATED_VPC"}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, name := range cloudEnv {
		t.Setenv(name, env[name])
	}
}

const eksEndpoint = "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com"

func TestCloudProviderSelection(t *testing.T) {
	aws := map[string]string{"CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": eksEndpoint}
	for _, tc := range []struct {
		name         string
		env          map[string]string
		args         []string
		want, source string
	}{
		{name: "nothing set: kwok", want: "kwok", source: "the default --cloud-provider=kwok"},
		{name: "env selects aws", env: map[string]string{"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": eksEndpoint}, want: "aws", source: "$CLOUD_PROVIDER=aws"},
		{name: "flag selects aws", env: aws, args: []string{"--cloud-provider=aws"}, want: "aws", source: "--cloud-provider=aws"},
		{name: "flag wins over env", env: map[string]string{"CLOUD_PROVIDER": "aws"}, args: []string{"--cloud-provider=kwok"}, want: "kwok", source: "--cloud-provider=kwok"},
		{name: "flag wins over an unsupported env value", env: map[string]string{"CLOUD_PROVIDER": "gcp"}, args: []string{"--cloud-provider=kwok"}, want: "kwok", source: "--cloud-provider=kwok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			f, _, err := parseManagerFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if f.cloud.provider != tc.want || !strings.HasPrefix(f.cloud.providerSource(), tc.source) {
				t.Errorf("provider %q selected by %q, want %q selected by %q", f.cloud.provider, f.cloud.providerSource(), tc.want, tc.source)
			}
		})
	}
}

// TestAWSSettingsFromEnvironment: every aws setting an OLM install needs can come from a variable,
// and a flag given on the command line wins over it.
func TestAWSSettingsFromEnvironment(t *testing.T) {
	setEnv(t, map[string]string{
		"CLOUD_PROVIDER": "aws", "AWS_REGION": "eu-west-1", "INTERRUPTION_QUEUE": "joist-prod", "CLUSTER_NAME": "prod",
		"CLUSTER_ENDPOINT": eksEndpoint, "CLUSTER_CA_BUNDLE": "Y2E=", "CLUSTER_CIDR": "10.100.0.0/16",
		"VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "1", "ISOLATED_VPC": "true",
	})
	f, _, err := parseManagerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := awsFlags{region: "eu-west-1", queue: "joist-prod", clusterName: "prod", clusterEndpoint: eksEndpoint, clusterCA: "Y2E=",
		clusterCIDR: "10.100.0.0/16", vmMemoryOverhead: 0.1, reservedENIs: 1, disablePricing: true}
	if f.cloud.provider != "aws" || f.cloud.aws != want {
		t.Errorf("from the environment: provider %q, %+v; want aws, %+v", f.cloud.provider, f.cloud.aws, want)
	}

	f, _, err = parseManagerFlags([]string{"--aws-region=us-east-2", "--aws-interruption-queue=q", "--aws-cluster-name=staging",
		"--aws-cluster-endpoint=https://staging.example", "--aws-cluster-ca-bundle=Yg==", "--aws-cluster-cidr=fd00::/108",
		"--aws-vm-memory-overhead-percent=0.05", "--aws-reserved-enis=0", "--aws-disable-pricing=false"})
	if err != nil {
		t.Fatal(err)
	}
	want = awsFlags{region: "us-east-2", queue: "q", clusterName: "staging", clusterEndpoint: "https://staging.example", clusterCA: "Yg==",
		clusterCIDR: "fd00::/108", vmMemoryOverhead: 0.05}
	if f.cloud.aws != want {
		t.Errorf("flags over the environment: %+v, want %+v", f.cloud.aws, want)
	}

	setEnv(t, map[string]string{"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": eksEndpoint})
	if f, _, err = parseManagerFlags(nil); err != nil {
		t.Fatal(err)
	}
	want = awsFlags{clusterName: "prod", clusterEndpoint: eksEndpoint, vmMemoryOverhead: 0.075}
	if f.cloud.aws != want {
		t.Errorf("defaults: %+v, want %+v", f.cloud.aws, want)
	}
}

// TestCloudSettingErrors: a bad or missing setting stops the manager before it connects anywhere,
// and the message names the flag, the variable and the fix.
func TestCloudSettingErrors(t *testing.T) {
	aws := func(extra map[string]string) map[string]string {
		env := map[string]string{"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": eksEndpoint}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{name: "unsupported provider from env", env: map[string]string{"CLOUD_PROVIDER": "gcp"},
			want: []string{`"gcp"`, "from $CLOUD_PROVIDER=gcp", "--cloud-provider", "aws, azure or kwok"}},
		{name: "unsupported provider from flag", env: map[string]string{"CLOUD_PROVIDER": "aws"}, args: []string{"--cloud-provider=gce"},
			want: []string{`"gce"`, "from --cloud-provider=gce", "$CLOUD_PROVIDER", "aws, azure or kwok"}},
		{name: "azure without its settings", env: map[string]string{"CLUSTER_NAME": "prod", "LOCATION": "eastus"}, args: []string{"--cloud-provider=azure"},
			want: []string{"selected by --cloud-provider=azure", "$ARM_SUBSCRIPTION_ID (--azure-subscription-id)", "$KUBELET_BOOTSTRAP_TOKEN", "docs/azure.md"}},
		{name: "aws from env without cluster", env: map[string]string{"CLOUD_PROVIDER": "aws"},
			want: []string{"selected by $CLOUD_PROVIDER=aws", "$CLUSTER_NAME (--aws-cluster-name)",
				"spec.config.env", "config/default", "config/kwok"}},
		{name: "aws from flag without cluster name", args: []string{"--cloud-provider=aws"},
			want: []string{"selected by --cloud-provider=aws", "$CLUSTER_NAME (--aws-cluster-name)"}},
		{name: "endpoint without scheme", env: aws(map[string]string{"CLUSTER_ENDPOINT": "ABCDEF.gr7.us-west-2.eks.amazonaws.com"}),
			want: []string{"$CLUSTER_ENDPOINT=ABCDEF", "https://", "--aws-cluster-endpoint"}},
		{name: "endpoint flag over a good env", env: aws(nil), args: []string{"--aws-cluster-endpoint=http://10.0.0.1"},
			want: []string{"from --aws-cluster-endpoint=http://10.0.0.1", "$CLUSTER_ENDPOINT"}},
		{name: "unparsable overhead", env: aws(map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "7.5%"}),
			want: []string{`$VM_MEMORY_OVERHEAD_PERCENT="7.5%"`, "--aws-vm-memory-overhead-percent", "invalid syntax"}},
		{name: "overhead out of range", env: aws(map[string]string{"VM_MEMORY_OVERHEAD_PERCENT": "7.5"}),
			want: []string{"$VM_MEMORY_OVERHEAD_PERCENT=7.5", "[0, 1)", "--aws-vm-memory-overhead-percent"}},
		{name: "unparsable reserved ENIs", env: aws(map[string]string{"RESERVED_ENIS": "one"}),
			want: []string{`$RESERVED_ENIS="one"`, "--aws-reserved-enis"}},
		{name: "negative reserved ENIs", env: aws(nil), args: []string{"--aws-reserved-enis=-1"},
			want: []string{"from --aws-reserved-enis=-1", "$RESERVED_ENIS"}},
		{name: "unparsable isolated VPC", env: aws(map[string]string{"ISOLATED_VPC": "yes"}),
			want: []string{`$ISOLATED_VPC="yes"`, "--aws-disable-pricing"}},
		{name: "CA bundle not base64", env: aws(map[string]string{"CLUSTER_CA_BUNDLE": "-----BEGIN CERTIFICATE-----"}),
			want: []string{"from $CLUSTER_CA_BUNDLE is not base64", "--aws-cluster-ca-bundle"}},
		{name: "CIDR", env: aws(map[string]string{"CLUSTER_CIDR": "10.100.0.0"}),
			want: []string{"$CLUSTER_CIDR=10.100.0.0", "--aws-cluster-cidr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, tc.env)
			_, _, err := parseManagerFlags(tc.args)
			if err == nil {
				t.Fatalf("want an error naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestInvalidEnvironmentIgnoredWhenFlagGiven: the flag wins, so a bad variable it overrides, or one
// the selected provider does not read, does not stop the manager.
func TestInvalidEnvironmentIgnoredWhenFlagGiven(t *testing.T) {
	setEnv(t, map[string]string{"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": eksEndpoint,
		"VM_MEMORY_OVERHEAD_PERCENT": "7.5%", "RESERVED_ENIS": "one"})
	f, _, err := parseManagerFlags([]string{"--aws-vm-memory-overhead-percent=0.08", "--aws-reserved-enis=2"})
	if err != nil {
		t.Fatal(err)
	}
	if f.cloud.aws.vmMemoryOverhead != 0.08 || f.cloud.aws.reservedENIs != 2 {
		t.Errorf("flags not honoured: %+v", f.cloud.aws)
	}
	setEnv(t, map[string]string{"CLUSTER_ENDPOINT": "not a url", "CLUSTER_CIDR": "x", "VM_MEMORY_OVERHEAD_PERCENT": "7.5%"})
	if _, _, err := parseManagerFlags(nil); err != nil {
		t.Errorf("kwok must not check the aws settings: %v", err)
	}
}
