package aws_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
)

var placeholders = map[string]string{"REGION": "us-west-2", "ACCOUNT": fake.Account, "CLUSTER": cluster}

// documentedPolicy is docs/aws.md's controller policy, as users create it.
func documentedPolicy(t *testing.T) *fake.Policy {
	t.Helper()
	md, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	p, err := fake.PolicyFromMarkdown(md, "Controller IAM policy", placeholders)
	if err != nil {
		t.Fatalf("docs/aws.md's controller policy: %v", err)
	}
	return p
}

// karpenterPolicy is Karpenter's published controller policy (its getting-started CloudFormation
// template's managed policies, merged into one document).
func karpenterPolicy(t *testing.T) *fake.Policy {
	t.Helper()
	doc, err := os.ReadFile("testdata/karpenter-controller-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for k, v := range placeholders {
		text = strings.ReplaceAll(text, k, v)
	}
	p, err := fake.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A spot and an on-demand launch, then termination, under the documented policy and under
// Karpenter's: every created resource (launch template, fleet, instance, volume, primary network
// interface, spot request) is authorized with its own request tags.
func TestLaunchAndTerminateUnderTheDocumentedAndKarpentersPolicy(t *testing.T) {
	for name, policy := range map[string]func(*testing.T) *fake.Policy{"docs/aws.md": documentedPolicy, "karpenter": karpenterPolicy} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.aws.SetPolicy(policy(t))
			w.apply(t, nodeClass("default"))
			ctx := context.Background()
			for _, capacityType := range []string{"spot", "on-demand"} {
				nc := claim("c-"+capacityType, req(v1.LabelInstanceType, "In", "m5.large", "c5.large"), req(v1.CapacityTypeLabelKey, "In", capacityType))
				launched, err := w.provider.Create(ctx, nc)
				if err != nil {
					t.Fatalf("%s launch: %v (denied: %v)", capacityType, err, w.aws.Denials())
				}
				if err := w.provider.Delete(ctx, launched); err != nil {
					t.Fatalf("terminating %s: %v (denied: %v)", launched.Status.ProviderID, err, w.aws.Denials())
				}
			}
			if d := w.aws.Denials(); len(d) > 0 {
				t.Errorf("denied: %v", d)
			}
			want := map[string]string{"kubernetes.io/cluster/prod": "owned", "eks:eks-cluster-name": "prod", "karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default", "team": "platform"}
			for _, inst := range w.aws.Instances() {
				for k, v := range want {
					if inst.ENITags[k] != v {
						t.Errorf("%s instance %s: network interface tag %s = %q, want %q", inst.Lifecycle, inst.ID, k, inst.ENITags[k], v)
					}
					if inst.Lifecycle == "spot" && inst.SpotRequestTags[k] != v {
						t.Errorf("spot instance %s: spot request tag %s = %q, want %q", inst.ID, k, inst.SpotRequestTags[k], v)
					}
				}
				if inst.State != "terminated" {
					t.Errorf("instance %s is %s after Delete", inst.ID, inst.State)
				}
			}
			for _, lt := range w.aws.LaunchTemplates() {
				for k, v := range want {
					if lt.Tags[k] != v {
						t.Errorf("launch template %s tag %s = %q, want %q", lt.Name, k, lt.Tags[k], v)
					}
				}
				if got := lt.Data.Get("MetadataOptions.InstanceMetadataTags"); got != "disabled" {
					t.Errorf("launch template %s InstanceMetadataTags = %q, want disabled", lt.Name, got)
				}
			}
		})
	}
}

// A role without a launch permission: CreateFleet's UnauthorizedOperation is a terminal error
// naming the action and resource, sent once (neither the SDK nor the provider retries it).
func TestUnauthorizedLaunchIsTerminalAndNamesThePermission(t *testing.T) {
	w := newWorld(t)
	doc := `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":["ec2:Describe*","ec2:CreateLaunchTemplate","ec2:CreateTags","ssm:GetParameter"],"Resource":"*"},
	  {"Effect":"Allow","Action":["ec2:CreateFleet","ec2:RunInstances"],"Resource":[
	    "arn:aws:ec2:*::image/*","arn:aws:ec2:*:*:subnet/*","arn:aws:ec2:*:*:security-group/*","arn:aws:ec2:*:*:launch-template/*",
	    "arn:aws:ec2:*:*:fleet/*","arn:aws:ec2:*:*:instance/*","arn:aws:ec2:*:*:volume/*"]}]}`
	p, err := fake.ParsePolicy([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	w.aws.SetPolicy(p)
	w.apply(t, nodeClass("default"))
	_, err = w.provider.Create(context.Background(), claim("denied", req(v1.CapacityTypeLabelKey, "In", "on-demand")))
	if err == nil || !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("Create = %v, want a terminal error", err)
	}
	for _, want := range []string{"UnauthorizedOperation", "ec2:CreateFleet on arn:aws:ec2:us-west-2:123456789012:network-interface/*", "docs/aws.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := len(w.aws.Calls("CreateFleet")); n != 1 {
		t.Errorf("CreateFleet calls = %d, want 1 (no retry of an authorization failure)", n)
	}
}

// A role that may not create launch templates: EC2's top-level 403 UnauthorizedOperation (its XML
// error shape, read by the real SDK) becomes the same terminal error, naming CreateLaunchTemplate.
func TestUnauthorizedLaunchTemplateIsTerminal(t *testing.T) {
	w := newWorld(t)
	p, err := fake.ParsePolicy([]byte(`{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":["ec2:Describe*","ssm:GetParameter","ec2:CreateFleet","ec2:RunInstances","ec2:CreateTags"],"Resource":"*"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	w.aws.SetPolicy(p)
	w.apply(t, nodeClass("default"))
	_, err = w.provider.Create(context.Background(), claim("no-lt", req(v1.CapacityTypeLabelKey, "In", "on-demand")))
	if !errors.Is(err, reconcile.TerminalError(nil)) || !strings.Contains(err.Error(), "ec2:CreateLaunchTemplate on arn:aws:ec2:us-west-2:123456789012:launch-template/*") {
		t.Fatalf("Create = %v, want a terminal error naming ec2:CreateLaunchTemplate", err)
	}
	if n := len(w.aws.Calls("CreateLaunchTemplate")); n != 1 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 1 (the SDK does not retry UnauthorizedOperation)", n)
	}
}
