package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAWSRenderExamples feeds every example of Karpenter's examples/v1 through `joist aws render`
// with cluster settings on flags. The user data it prints is the one awsprovider.Render returns,
// which cloudprovider/aws's TestKarpenterExamples checks with nodeadm's types, the kubelet's
// KubeletConfiguration, MIME, bash and TOML parsers for the same files.
func TestAWSRenderExamples(t *testing.T) {
	files, err := filepath.Glob("../../api/aws/v1/testdata/karpenter-examples/*.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("examples: %v %v", files, err)
	}
	flags := []string{"--instance-type", "m5.large", "--cluster-name", "prod", "--cluster-endpoint", "https://ABC.gr7.us-west-2.eks.amazonaws.com",
		"--cluster-ca-bundle", "Q0E=", "--cluster-cidr", "172.20.0.0/16", "--kubernetes-version", "1.33"}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if !strings.Contains(string(data), "kind: EC2NodeClass") {
			continue
		}
		var out bytes.Buffer
		err := awsRender(append([]string{"-f", f}, flags...), &out)
		if strings.Contains(filepath.Base(f), "windows") {
			if err == nil || !strings.Contains(err.Error(), "not supported by Joist yet") {
				t.Errorf("%s: %v, want Windows refused", f, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		s := out.String()
		for _, want := range []string{"# AMI query\n", "# Launch template (CreateLaunchTemplate input)\n", "LaunchTemplateName: joist/", "# User data ("} {
			if !strings.Contains(s, want) {
				t.Errorf("%s: output lacks %q:\n%s", f, want, s)
			}
		}
		if strings.Contains(s, "alias: al2023") && !strings.Contains(s, "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/") {
			t.Errorf("%s: AMI query lacks the standard x86_64 AL2023 parameter:\n%s", f, s)
		}
		if strings.Contains(s, "(AL2023, decoded)") && !strings.Contains(s, "cidr: 172.20.0.0/16") {
			t.Errorf("%s: NodeConfig lacks the CIDR given on the flags:\n%s", f, s)
		}
	}
}
