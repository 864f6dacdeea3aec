package ec2nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// amis resolves amiSelectorTerms: aliases and ssmParameter terms through SSM, the others through
// DescribeImages. The newest image of each architecture is kept (deprecated ones only when
// nothing else serves the architecture).
func (c *Controller) amis(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	images, err := c.images(ctx, nc)
	if err != nil {
		nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, "AMIDiscoveryFailed", err.Error())
		return false
	}
	sort.SliceStable(images, func(i, j int) bool {
		a, b := images[i], images[j]
		if deprecated(a) != deprecated(b) {
			return !deprecated(a)
		}
		return aws.ToString(a.CreationDate) > aws.ToString(b.CreationDate)
	})
	seen := map[string]bool{}
	nc.Status.AMIs = nil
	for _, img := range images {
		arch := map[ec2types.ArchitectureValues]string{ec2types.ArchitectureValuesX8664: "amd64", ec2types.ArchitectureValuesArm64: "arm64"}[img.Architecture]
		if arch == "" || seen[arch] {
			continue
		}
		seen[arch] = true
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1.AMI{
			ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Deprecated: deprecated(img),
			Requirements: []corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}},
		})
	}
	if len(nc.Status.AMIs) == 0 {
		nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, "AMINotFound",
			"no amd64 or arm64 image matches spec.amiSelectorTerms: check the alias, ids, names, owners or tags")
		return false
	}
	nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionTrue, "AMIsReady", "")
	return true
}

func deprecated(img ec2types.Image) bool { return aws.ToString(img.DeprecationTime) != "" }

func (c *Controller) images(ctx context.Context, nc *awsv1.EC2NodeClass) ([]ec2types.Image, error) {
	var ids []string
	var out []ec2types.Image
	for _, term := range nc.Spec.AMISelectorTerms {
		switch {
		case term.Alias != "":
			found, err := c.aliasImageIDs(ctx, term.Alias)
			if err != nil {
				return nil, err
			}
			ids = append(ids, found...)
		case term.SSMParameter != "":
			id, err := c.parameter(ctx, term.SSMParameter)
			if err != nil {
				return nil, err
			}
			if id == "" {
				return nil, fmt.Errorf("SSM parameter %s (amiSelectorTerms ssmParameter) does not exist", term.SSMParameter)
			}
			ids = append(ids, id)
		default:
			in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags)}
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
				in.Owners = []string{"self", "amazon"} // a bare name must not pick up anybody's image
			}
			imgs, err := c.describeImages(ctx, in)
			if err != nil {
				return nil, err
			}
			out = append(out, imgs...)
		}
	}
	if len(ids) > 0 {
		imgs, err := c.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids})
		if err != nil {
			return nil, err
		}
		out = append(out, imgs...)
	}
	return out, nil
}

func (c *Controller) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	var out []ec2types.Image
	pages := ec2.NewDescribeImagesPaginator(c.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s", awsprovider.Explain("EC2 DescribeImages", err))
		}
		out = append(out, page.Images...)
	}
	return out, nil
}

// aliasImageIDs reads the EKS-optimized AMI ids an alias names from their public SSM parameters,
// one per architecture; an architecture the family does not publish is skipped.
func (c *Controller) aliasImageIDs(ctx context.Context, alias string) ([]string, error) {
	family, version, _ := strings.Cut(alias, "@")
	k8s := ""
	if c.opts.KubernetesVersion != nil {
		var err error
		if k8s, err = c.opts.KubernetesVersion(ctx); err != nil {
			return nil, fmt.Errorf("reading the cluster's Kubernetes version for alias %s: %w", alias, err)
		}
	}
	var params []string
	switch strings.ToLower(family) {
	case "al2023":
		for _, arch := range []string{"x86_64", "arm64"} {
			if version == "latest" {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/recommended/image_id", k8s, arch))
			} else {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/amazon-eks-node-al2023-%s-standard-%s-%s/image_id", k8s, arch, arch, k8s, version))
			}
		}
	case "al2":
		for _, suffix := range []string{"", "-arm64"} {
			if version == "latest" {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/recommended/image_id", k8s, suffix))
			} else {
				params = append(params, fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2%s/amazon-eks-node-%s-%s/image_id", k8s, suffix, k8s, version))
			}
		}
	case "bottlerocket":
		v := strings.TrimPrefix(version, "v")
		for _, arch := range []string{"x86_64", "arm64"} {
			params = append(params, fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/%s/image_id", k8s, arch, v))
		}
	default:
		return nil, fmt.Errorf("alias %s: family %s is not supported by Joist yet (al2023, al2, bottlerocket)", alias, family)
	}
	var ids []string
	for _, name := range params {
		id, err := c.parameter(ctx, name)
		if err != nil {
			return nil, err
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("alias %s: no image published for Kubernetes %s (SSM parameters %s not found)", alias, k8s, strings.Join(params, ", "))
	}
	return ids, nil
}

// parameter reads an SSM parameter; "" when it does not exist.
func (c *Controller) parameter(ctx context.Context, name string) (string, error) {
	out, err := c.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		if strings.Contains(err.Error(), "ParameterNotFound") {
			return "", nil
		}
		return "", fmt.Errorf("%s", awsprovider.Explain("SSM GetParameter "+name, err))
	}
	return aws.ToString(out.Parameter.Value), nil
}
