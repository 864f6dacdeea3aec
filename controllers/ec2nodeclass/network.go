package ec2nodeclass

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// tagFilters turns selector tags into EC2 filters ("*" selects any value of the key).
func tagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []ec2types.Filter
	for _, k := range keys {
		if tags[k] == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{tags[k]}})
		}
	}
	return out
}

// subnets resolves subnetSelectorTerms; the status lists them by free addresses, most first.
func (c *Controller) subnets(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	type found struct {
		s    awsv1.Subnet
		free int32
	}
	byID := map[string]found{}
	for _, term := range nc.Spec.SubnetSelectorTerms {
		filters := tagFilters(term.Tags)
		if term.ID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{term.ID}})
		}
		pages := ec2.NewDescribeSubnetsPaginator(c.ec2, &ec2.DescribeSubnetsInput{Filters: filters})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				nc.SetCondition(awsv1.ConditionTypeSubnetsReady, metav1.ConditionFalse, "DiscoveryFailed", awsprovider.Explain("EC2 DescribeSubnets", err))
				return false
			}
			for _, s := range page.Subnets {
				id := aws.ToString(s.SubnetId)
				byID[id] = found{s: awsv1.Subnet{ID: id, Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}, free: aws.ToInt32(s.AvailableIpAddressCount)}
			}
		}
	}
	list := make([]found, 0, len(byID))
	for _, f := range byID {
		list = append(list, f)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].free != list[j].free {
			return list[i].free > list[j].free
		}
		return list[i].s.ID < list[j].s.ID
	})
	nc.Status.Subnets = nil
	for _, f := range list {
		nc.Status.Subnets = append(nc.Status.Subnets, f.s)
	}
	if len(list) == 0 {
		nc.SetCondition(awsv1.ConditionTypeSubnetsReady, metav1.ConditionFalse, "SubnetsNotFound",
			"no subnet matches spec.subnetSelectorTerms: check the tags (e.g. karpenter.sh/discovery: <cluster>) or ids")
		return false
	}
	nc.SetCondition(awsv1.ConditionTypeSubnetsReady, metav1.ConditionTrue, "SubnetsReady", "")
	return true
}

// securityGroups resolves securityGroupSelectorTerms.
func (c *Controller) securityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	byID := map[string]awsv1.SecurityGroup{}
	for _, term := range nc.Spec.SecurityGroupSelectorTerms {
		filters := tagFilters(term.Tags)
		if term.ID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{term.ID}})
		}
		if term.Name != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{term.Name}})
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(c.ec2, &ec2.DescribeSecurityGroupsInput{Filters: filters})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				nc.SetCondition(awsv1.ConditionTypeSecurityGroupsReady, metav1.ConditionFalse, "DiscoveryFailed", awsprovider.Explain("EC2 DescribeSecurityGroups", err))
				return false
			}
			for _, g := range page.SecurityGroups {
				id := aws.ToString(g.GroupId)
				byID[id] = awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)}
			}
		}
	}
	nc.Status.SecurityGroups = nil
	for _, g := range byID {
		nc.Status.SecurityGroups = append(nc.Status.SecurityGroups, g)
	}
	sort.Slice(nc.Status.SecurityGroups, func(i, j int) bool { return nc.Status.SecurityGroups[i].ID < nc.Status.SecurityGroups[j].ID })
	if len(byID) == 0 {
		nc.SetCondition(awsv1.ConditionTypeSecurityGroupsReady, metav1.ConditionFalse, "SecurityGroupsNotFound",
			"no security group matches spec.securityGroupSelectorTerms: check the tags, ids or names")
		return false
	}
	nc.SetCondition(awsv1.ConditionTypeSecurityGroupsReady, metav1.ConditionTrue, "SecurityGroupsReady", "")
	return true
}
