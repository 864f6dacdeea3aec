package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

func TestAliasParameters(t *testing.T) {
	for _, tc := range []struct {
		alias string
		want  []string
	}{
		{"al2023@latest", []string{
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/nvidia/recommended/image_id"}},
		{"al2023@v20240625", []string{
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.33-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.33-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.33-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.33-v20240625/image_id"}},
		{"al2@v20240625", []string{
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2/amazon-eks-node-1.33-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2-arm64/amazon-eks-arm64-node-1.33-v20240625/image_id",
			"/aws/service/eks/optimized-ami/1.33/amazon-linux-2-gpu/amazon-eks-gpu-node-1.33-v20240625/image_id"}},
		{"bottlerocket@v1.20.0", []string{
			"/aws/service/bottlerocket/aws-k8s-1.33/x86_64/1.20.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33/arm64/1.20.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.20.0/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/arm64/1.20.0/image_id"}},
	} {
		params, err := AliasParameters(tc.alias, "1.33")
		if err != nil {
			t.Fatal(err)
		}
		if len(params) != len(tc.want) {
			t.Fatalf("%s: %d parameters, want %d", tc.alias, len(params), len(tc.want))
		}
		for i, p := range params {
			if p.Name != tc.want[i] {
				t.Errorf("%s: parameter %d = %s, want %s", tc.alias, i, p.Name, tc.want[i])
			}
		}
	}
}

func instanceType(t *testing.T, name string) *catalog.InstanceType {
	t.Helper()
	info := ec2data.Lookup(name)
	it, err := ec2data.Build(info, ec2data.DefaultSettings())
	if err != nil {
		t.Fatal(err)
	}
	it.Labels[v1.LabelArch] = info.Arch
	return it
}

// A g5 and an m5 of one pool boot different images: the NVIDIA variant and the standard one.
func TestGPUAndStandardTypesGetTheirVariant(t *testing.T) {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Status.AMIs = []awsv1.AMI{
		{ID: "ami-nvidia", Requirements: AMIRequirements("amd64", VariantNvidia)},
		{ID: "ami-neuron", Requirements: AMIRequirements("amd64", VariantNeuron)},
		{ID: "ami-standard", Requirements: AMIRequirements("amd64", VariantStandard)},
		{ID: "ami-arm", Requirements: AMIRequirements("arm64", VariantStandard)},
	}
	for name, want := range map[string]string{"g5.xlarge": "ami-nvidia", "m5.large": "ami-standard", "inf2.xlarge": "ami-neuron", "m6g.large": "ami-arm"} {
		if got := amiFor(nc, instanceType(t, name)); got != want {
			t.Errorf("%s boots %s, want %s", name, got, want)
		}
	}

	// Drift: a node keeps its type's image; a g5 on the standard image, or an m5 whose standard
	// image was replaced by a newer one, has drifted.
	claimOf := func(it string) *v1.NodeClaim {
		c := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelInstanceTypeStable: it}}}
		for k, v := range instanceType(t, it).Labels {
			c.Labels[k] = v
		}
		return c
	}
	if amiDrifted(nc, claimOf("g5.xlarge"), "ami-nvidia") || amiDrifted(nc, claimOf("m5.large"), "ami-standard") {
		t.Error("nodes on their type's image reported drifted")
	}
	if !amiDrifted(nc, claimOf("g5.xlarge"), "ami-standard") {
		t.Error("a g5 on the standard image is not reported drifted")
	}
	nc.Status.AMIs[2].ID = "ami-standard-newer"
	if !amiDrifted(nc, claimOf("m5.large"), "ami-standard") {
		t.Error("an m5 whose standard image was replaced is not reported drifted")
	}
}
