package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// Drift reasons.
const (
	DriftNodeClass     cloudprovider.DriftReason = "NodeClassDrift"
	DriftAMI           cloudprovider.DriftReason = "AMIDrift"
	DriftSubnet        cloudprovider.DriftReason = "SubnetDrift"
	DriftSecurityGroup cloudprovider.DriftReason = "SecurityGroupDrift"
)

// IsDrifted reports why the claim's instance no longer matches its EC2NodeClass: the NodeClass's
// static fields changed (hash), or its AMI, subnet or security groups are no longer selected. A
// NodeClass not Ready yet reports nothing (its status may be stale).
func (p *CloudProvider) IsDrifted(ctx context.Context, claim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return "", err
	}
	if !nc.IsTrue(awsv1.ConditionTypeReady) {
		return "", nil
	}
	if claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion &&
		claim.Annotations[awsv1.AnnotationEC2NodeClassHash] != "" && claim.Annotations[awsv1.AnnotationEC2NodeClassHash] != nc.Hash(p.opts.ClusterCABundle) {
		return DriftNodeClass, nil
	}
	if claim.Status.ProviderID == "" {
		return "", nil
	}
	inst, err := p.cachedInstance(ctx, claim.Status.ProviderID)
	if err != nil {
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			return "", nil // gone: garbage collection's business
		}
		return "", err
	}
	if amiDrifted(nc, claim, aws.ToString(inst.ImageId)) { // drift_ami.go
		return DriftAMI, nil
	}
	subnetOK := false
	for _, s := range nc.Status.Subnets {
		subnetOK = subnetOK || s.ID == aws.ToString(inst.SubnetId)
	}
	if !subnetOK {
		return DriftSubnet, nil
	}
	want := map[string]bool{}
	for _, sg := range nc.Status.SecurityGroups {
		want[sg.ID] = true
	}
	got := map[string]bool{}
	for _, g := range inst.SecurityGroups {
		got[aws.ToString(g.GroupId)] = true
	}
	if len(got) > 0 && !sameSet(want, got) {
		return DriftSecurityGroup, nil
	}
	return "", nil
}

// selectedAMI: an AMI still selected and, if the claim's architecture has newer images, the one
// the NodeClass would launch now.
func selectedAMI(nc *awsv1.EC2NodeClass, id string) bool {
	for _, ami := range nc.Status.AMIs {
		if ami.ID == id {
			return true
		}
	}
	return false
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
