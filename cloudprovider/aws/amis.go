package aws

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// AMI variants an alias resolves to, each for the instance types Karpenter boots it on.
const (
	VariantStandard = "standard"
	VariantNvidia   = "nvidia"
	VariantNeuron   = "neuron"
)

// VariantRequirements are the instance-type requirements of an AMI variant (Karpenter's): the
// standard image for types with neither GPUs nor accelerators, NVIDIA for GPU types, Neuron for
// accelerator (Inferentia/Trainium) types.
func VariantRequirements(variant string) []corev1.NodeSelectorRequirement {
	switch variant {
	case VariantNvidia:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case VariantNeuron:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	default:
		return []corev1.NodeSelectorRequirement{
			{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		}
	}
}

// AliasParameter is one public SSM parameter an alias reads, the architecture of its image and
// the variants it serves (the AL2 GPU image serves both NVIDIA and Neuron types).
type AliasParameter struct {
	Name     string
	Arch     string // amd64 or arm64
	Variants []string
}

// AliasParameters are the SSM parameters of the EKS-optimized AMIs an alias ("al2023@latest",
// "bottlerocket@v1.20.0") names for a Kubernetes minor version: the names AWS publishes, as
// Karpenter reads them.
func AliasParameters(alias, k8sVersion string) ([]AliasParameter, error) {
	family, version, ok := strings.Cut(alias, "@")
	if !ok || version == "" {
		return nil, fmt.Errorf("alias %q is not family@version", alias)
	}
	if k8sVersion == "" {
		return nil, fmt.Errorf("alias %s: the cluster's Kubernetes version is unknown", alias)
	}
	latest := version == "latest"
	var out []AliasParameter
	switch strings.ToLower(family) {
	case "al2023":
		for _, a := range []struct {
			arch, ec2Arch string
			variants      []string
		}{
			{"amd64", "x86_64", []string{VariantStandard, VariantNvidia, VariantNeuron}},
			{"arm64", "arm64", []string{VariantStandard, VariantNvidia}},
		} {
			for _, variant := range a.variants {
				leaf := "recommended"
				if !latest {
					leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", a.ec2Arch, variant, k8sVersion, version)
				}
				out = append(out, AliasParameter{Arch: a.arch, Variants: []string{variant},
					Name: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8sVersion, a.ec2Arch, variant, leaf)})
			}
		}
	case "al2":
		for _, p := range []struct {
			arch, path, pinned string
			variants           []string
		}{
			{"amd64", "amazon-linux-2", "amazon-eks-node", []string{VariantStandard}},
			{"arm64", "amazon-linux-2-arm64", "amazon-eks-arm64-node", []string{VariantStandard}},
			{"amd64", "amazon-linux-2-gpu", "amazon-eks-gpu-node", []string{VariantNvidia, VariantNeuron}},
		} {
			leaf := "recommended"
			if !latest {
				leaf = fmt.Sprintf("%s-%s-%s", p.pinned, k8sVersion, version)
			}
			out = append(out, AliasParameter{Arch: p.arch, Variants: p.variants,
				Name: fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k8sVersion, p.path, leaf)})
		}
	case "bottlerocket":
		v := strings.TrimPrefix(version, "v") // GitHub tags carry a v, SSM names do not
		for _, p := range []struct {
			flavor, arch, ec2Arch string
			variants              []string
		}{
			{"", "amd64", "x86_64", []string{VariantStandard, VariantNeuron}},
			{"", "arm64", "arm64", []string{VariantStandard}},
			{"-nvidia", "amd64", "x86_64", []string{VariantNvidia}},
			{"-nvidia", "arm64", "arm64", []string{VariantNvidia}},
		} {
			out = append(out, AliasParameter{Arch: p.arch, Variants: p.variants,
				Name: fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8sVersion, p.flavor, p.ec2Arch, v)})
		}
	default:
		return nil, fmt.Errorf("alias %s: family %s is not supported by Joist yet (al2023, al2, bottlerocket)", alias, family)
	}
	return out, nil
}

// AMIRequirements are the requirements of an image of arch serving variant.
func AMIRequirements(arch, variant string) []corev1.NodeSelectorRequirement {
	reqs := []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}
	if variant == "" {
		return reqs
	}
	return append(reqs, VariantRequirements(variant)...)
}

// DescribeImagesInput is the DescribeImages query of an id, name or tags term: deprecated images
// included (an explicit term may pin one; a newer non-deprecated image still wins), and a bare
// name limited to the account's own and Amazon's images (not anybody's public image).
func DescribeImagesInput(term awsv1.AMISelectorTerm) *ec2.DescribeImagesInput {
	in := &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true)}
	keys := make([]string, 0, len(term.Tags))
	for k := range term.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if term.Tags[k] == "*" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{term.Tags[k]}})
		}
	}
	if term.ID != "" {
		in.ImageIds = []string{term.ID}
	}
	if term.Name != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
	}
	switch {
	case term.Owner != "":
		in.Owners = []string{term.Owner}
	case term.ID == "" && term.Name != "":
		in.Owners = []string{"self", "amazon"}
	}
	return in
}
