package aws

import (
	"encoding/base64"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

// RenderInput is a node to render without calling AWS: the cluster's coordinates (as flags give
// them), the EC2NodeClass and NodePool, and the instance type.
type RenderInput struct {
	ClusterName  string
	Cluster      ClusterInfo
	NodeClass    *awsv1.EC2NodeClass
	NodePool     *v1.NodePool
	InstanceType string
	// CapacityType is on-demand (default) or spot.
	CapacityType string
	// Image is the AMI id to put in the launch template (offline, Joist cannot resolve it; default
	// a placeholder naming the query).
	Image string
}

// RenderedAMIQuery is how the image of the instance type would be found.
type RenderedAMIQuery struct {
	// SSMParameters are read for alias and ssmParameter terms (an alias: only the parameters of the
	// type's architecture and variant).
	SSMParameters []string `json:"ssmParameters,omitempty"`
	// DescribeImages are the queries of id, name and tag terms.
	DescribeImages []*ec2.DescribeImagesInput `json:"describeImages,omitempty"`
	// Requirements the image must serve for the type (architecture, GPU/accelerator variant).
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// Rendered is what a node of the type would boot with.
type Rendered struct {
	AMIQuery       RenderedAMIQuery               `json:"amiQuery"`
	LaunchTemplate *ec2.CreateLaunchTemplateInput `json:"launchTemplate"`
	// UserData is decoded (the launch template holds it base64-encoded).
	UserData string `json:"userData"`
}

// Render builds the AMI query, launch template and user data of a node of in.InstanceType from
// in.NodePool and in.NodeClass, with the same functions a launch uses.
func Render(in RenderInput) (*Rendered, error) {
	nc := in.NodeClass
	info := ec2data.Lookup(in.InstanceType)
	if info == nil {
		return nil, fmt.Errorf("instance type %s is not in the embedded EC2 data", in.InstanceType)
	}
	labels := map[string]string{corev1.LabelInstanceTypeStable: in.InstanceType, v1.LabelArch: info.Arch}
	for k, v := range info.Labels {
		labels[k] = v
	}
	capacityType := in.CapacityType
	if capacityType == "" {
		capacityType = v1.CapacityTypeOnDemand
	}
	query, err := renderAMIQuery(nc, info.Arch, labels, in.Cluster.KubernetesVersion)
	if err != nil {
		return nil, err
	}
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: in.NodePool.Name + "-render", Labels: map[string]string{v1.NodePoolLabelKey: in.NodePool.Name}}}
	claim.Spec.Taints = in.NodePool.Spec.Template.Spec.Taints
	claim.Spec.StartupTaints = in.NodePool.Spec.Template.Spec.StartupTaints
	b := claimBootstrap(in.ClusterName, in.Cluster, nc, claim, capacityType)
	userData, err := b.userData(nc.AMIFamily())
	if err != nil {
		return nil, err
	}
	image := in.Image
	if image == "" {
		image = "ami-RESOLVED-BY-QUERY"
	}
	lt := launchTemplateInput{nodeClass: nc, amiID: image, userData: userData, securityGroups: securityGroupIDs(nc), instanceProfile: nc.InstanceProfileName(),
		tags: resourceTags(in.ClusterName, nc, claim), capacityType: capacityType}
	if lt.instanceProfile == "" && nc.Spec.Role != "" {
		lt.instanceProfile = "<instance profile of role " + nc.Spec.Role + ">"
	}
	tmpl := (&launchTemplates{}).createInput(lt.name(), lt)
	decoded, err := base64.StdEncoding.DecodeString(userData)
	if err != nil {
		return nil, err
	}
	return &Rendered{AMIQuery: query, LaunchTemplate: tmpl, UserData: string(decoded)}, nil
}

func securityGroupIDs(nc *awsv1.EC2NodeClass) []string {
	var out []string
	for _, sg := range nc.Status.SecurityGroups {
		out = append(out, sg.ID)
	}
	for _, term := range nc.Spec.SecurityGroupSelectorTerms {
		if term.ID != "" && !contains(out, term.ID) {
			out = append(out, term.ID)
		}
	}
	return out
}

// renderAMIQuery: for an alias, the SSM parameters whose image serves the type (its architecture
// and variant); for other terms, their SSM parameter or DescribeImages query.
func renderAMIQuery(nc *awsv1.EC2NodeClass, arch string, labels map[string]string, k8sVersion string) (RenderedAMIQuery, error) {
	var q RenderedAMIQuery
	variant := ""
	for _, term := range nc.Spec.AMISelectorTerms {
		switch {
		case term.Alias != "":
			params, err := AliasParameters(term.Alias, k8sVersion)
			if err != nil {
				return q, err
			}
			for _, p := range params {
				for _, v := range p.Variants {
					if p.Arch == arch && amiServes(awsv1.AMI{Requirements: AMIRequirements(arch, v)}, labels) {
						q.SSMParameters = append(q.SSMParameters, p.Name)
						variant = v
					}
				}
			}
			if len(q.SSMParameters) == 0 {
				return q, fmt.Errorf("alias %s publishes no image for %s instance types like this one", term.Alias, arch)
			}
		case term.SSMParameter != "":
			q.SSMParameters = append(q.SSMParameters, term.SSMParameter)
		default:
			q.DescribeImages = append(q.DescribeImages, DescribeImagesInput(term))
		}
	}
	q.Requirements = AMIRequirements(arch, variant)
	return q, nil
}
