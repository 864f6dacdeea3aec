package ec2nodeclass

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// candidate is an image with the variants it serves (none: an image chosen by id, name or tags,
// which serves every type of its architecture).
type candidate struct {
	image    ec2types.Image
	variants []string
}

// amis resolves amiSelectorTerms: aliases and ssmParameter terms through SSM, the others through
// DescribeImages (deprecated images included, as Karpenter does). For each architecture × variant
// the newest image is kept, preferring images whose deprecation time has not passed. An alias
// yields the standard, NVIDIA and Neuron images AWS publishes, each with the instance-type
// requirements Karpenter gives it.
func (c *Controller) amis(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	cands, err := c.images(ctx, nc)
	if err != nil {
		nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, "AMIDiscoveryFailed", err.Error())
		return false
	}
	nc.Status.AMIs = selectAMIs(cands, c.now())
	if len(nc.Status.AMIs) == 0 {
		nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, "AMINotFound",
			"no amd64 or arm64 image matches spec.amiSelectorTerms: check the alias, ids, names, owners or tags")
		return false
	}
	nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionTrue, "AMIsReady", "")
	return true
}

func (c *Controller) now() time.Time {
	if c.opts.Now != nil {
		return c.opts.Now()
	}
	return time.Now()
}

// selectAMIs keeps the best image per architecture × variant: not deprecated at now first, then
// the newest, then the greater name; the result is in that order too.
func selectAMIs(cands []candidate, now time.Time) []awsv1.AMI {
	type keyed struct {
		ami      awsv1.AMI
		created  string
		deprecat bool
	}
	best := map[string]keyed{}
	var order []string
	for _, cand := range cands {
		img := cand.image
		arch := map[ec2types.ArchitectureValues]string{ec2types.ArchitectureValuesX8664: "amd64", ec2types.ArchitectureValuesArm64: "arm64"}[img.Architecture]
		if arch == "" {
			continue
		}
		variants := cand.variants
		if len(variants) == 0 {
			variants = []string{""}
		}
		for _, variant := range variants {
			k := keyed{created: aws.ToString(img.CreationDate), deprecat: Deprecated(img, now), ami: awsv1.AMI{
				ID: aws.ToString(img.ImageId), Name: aws.ToString(img.Name), Requirements: awsprovider.AMIRequirements(arch, variant),
			}}
			k.ami.Deprecated = k.deprecat
			key := arch + "/" + variant
			old, seen := best[key]
			if !seen {
				order = append(order, key)
			}
			if !seen || better(k.deprecat, k.created, k.ami.Name, old.deprecat, old.created, old.ami.Name) {
				best[key] = k
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := best[order[i]], best[order[j]]
		return better(a.deprecat, a.created, a.ami.Name, b.deprecat, b.created, b.ami.Name)
	})
	out := make([]awsv1.AMI, 0, len(order))
	for _, k := range order {
		out = append(out, best[k].ami)
	}
	return out
}

func better(depA bool, createdA, nameA string, depB bool, createdB, nameB string) bool {
	if depA != depB {
		return !depA
	}
	if createdA != createdB {
		return createdA > createdB
	}
	return nameA > nameB
}

// Deprecated reports whether img's deprecation time has passed at now (EC2 reports the time an
// image will be deprecated well before it is).
func Deprecated(img ec2types.Image, now time.Time) bool {
	s := aws.ToString(img.DeprecationTime)
	if s == "" {
		return false
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return true // unreadable: treat as deprecated, newer images win
	}
	return !t.After(now)
}

func (c *Controller) images(ctx context.Context, nc *awsv1.EC2NodeClass) ([]candidate, error) {
	var ids []string
	variantsOf := map[string][]string{}
	var out []candidate
	for _, term := range nc.Spec.AMISelectorTerms {
		switch {
		case term.Alias != "":
			found, err := c.aliasImageIDs(ctx, term.Alias)
			if err != nil {
				return nil, err
			}
			for id, variants := range found {
				ids = append(ids, id)
				variantsOf[id] = append(variantsOf[id], variants...)
			}
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
			imgs, err := c.describeImages(ctx, awsprovider.DescribeImagesInput(term))
			if err != nil {
				return nil, err
			}
			for _, img := range imgs {
				out = append(out, candidate{image: img})
			}
		}
	}
	if len(ids) > 0 {
		sort.Strings(ids)
		imgs, err := c.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids, IncludeDeprecated: aws.Bool(true)})
		if err != nil {
			return nil, err
		}
		for _, img := range imgs {
			out = append(out, candidate{image: img, variants: variantsOf[aws.ToString(img.ImageId)]})
		}
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

// aliasImageIDs reads the EKS-optimized AMI ids an alias names from their public SSM parameters
// (standard, NVIDIA and Neuron variants of each architecture); a parameter AWS does not publish
// is skipped. It returns each image id with the variants it serves.
func (c *Controller) aliasImageIDs(ctx context.Context, alias string) (map[string][]string, error) {
	k8s := ""
	if c.opts.KubernetesVersion != nil {
		var err error
		if k8s, err = c.opts.KubernetesVersion(ctx); err != nil {
			return nil, fmt.Errorf("reading the cluster's Kubernetes version for alias %s: %w", alias, err)
		}
	}
	params, err := awsprovider.AliasParameters(alias, k8s)
	if err != nil {
		return nil, err
	}
	ids := map[string][]string{}
	var names []string
	for _, p := range params {
		names = append(names, p.Name)
		id, err := c.parameter(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		if id != "" {
			ids[id] = append(ids[id], p.Variants...)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("alias %s: no image published for Kubernetes %s (SSM parameters %s not found)", alias, k8s, strings.Join(names, ", "))
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
