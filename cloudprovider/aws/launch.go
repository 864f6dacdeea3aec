package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// Create launches one instance for the claim with a CreateFleet of type instant over the cheapest
// instance types × zonal subnets it allows (spot when allowed, else on-demand). An instance already
// tagged for the claim is returned instead. When no offering had capacity the error is an
// InsufficientCapacityError naming every offering EC2 refused, for the launch path to mark.
func (p *CloudProvider) Create(ctx context.Context, claim *v1.NodeClaim) (*v1.NodeClaim, error) {
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return nil, err
	}
	if !nc.IsTrue(awsv1.ConditionTypeReady) {
		msg := "not reconciled yet"
		if c := nc.GetCondition(awsv1.ConditionTypeReady); c != nil {
			msg = c.Message
		}
		return nil, fmt.Errorf("EC2NodeClass %s is not ready: %s", nc.Name, msg)
	}
	if existing, err := p.instanceOfClaim(ctx, claim.Name); err != nil {
		return nil, err
	} else if existing != nil {
		return p.claimFromInstance(ctx, nc, existing)
	}
	its, err := p.instanceTypes(ctx, nc)
	if err != nil {
		return nil, err
	}
	req := p.launches.get(claim)
	if req == nil {
		if req, err = p.newFleetRequest(ctx, nc, claim, its); err != nil {
			return nil, err
		}
		p.launches.remember(claim, req)
	}
	capacityType := string(req.TargetCapacitySpecification.DefaultTargetCapacityType)
	out, err := p.clients.EC2.CreateFleet(ctx, req)
	if err != nil {
		if apiCode(err) != "" { // EC2 answered: the request launched nothing
			p.launches.forget(claim)
		}
		if isNotFound(err) {
			p.templates.forget() // deleted behind our back (NodeClass finalizer, console): recreate next time
		}
		if apiCode(err) == unauthorizedCode {
			return nil, unauthorizedError("creating fleet for "+claim.Name, err.Error())
		}
		return nil, fmt.Errorf("creating fleet for %s: %w", claim.Name, err)
	}
	launched := false
	for _, inst := range out.Instances {
		launched = launched || len(inst.InstanceIds) > 0
	}
	if !launched {
		p.launches.forget(claim)
	}
	for _, e := range out.Errors {
		if notFoundCodes[aws.ToString(e.ErrorCode)] {
			p.templates.forget()
		}
	}
	return p.fleetResult(ctx, nc, claim, its, req, out, capacityType)
}

// newFleetRequest picks the capacity type (spot whenever an available spot offering satisfies the
// claim) and builds the request with its ClientToken.
func (p *CloudProvider) newFleetRequest(ctx context.Context, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, its []*catalog.InstanceType) (*ec2.CreateFleetInput, error) {
	options := cloudprovider.LaunchOptions(claim.Spec.Requirements, its, p.unavailable)
	if len(options) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{Err: fmt.Errorf("no available offering of EC2NodeClass %s satisfies the requirements of %s", nc.Name, claim.Name)}
	}
	capacityType := v1.CapacityTypeOnDemand
	for _, o := range options {
		if o.Offering.CapacityType == v1.CapacityTypeSpot {
			capacityType = v1.CapacityTypeSpot
		}
	}
	req, err := p.fleetRequest(ctx, nc, claim, options, capacityType)
	if err != nil {
		if apiCode(err) == unauthorizedCode {
			return nil, unauthorizedError("creating a launch template for "+claim.Name, err.Error())
		}
		return nil, err
	}
	req.ClientToken = aws.String(clientToken(claim, req))
	return req, nil
}

// fleetRequest builds the CreateFleet input: one launch template config per AMI, overrides =
// instance types (the cheapest MaxFleetInstanceTypes) × the zones they are offered in, one subnet
// per zone.
func (p *CloudProvider) fleetRequest(ctx context.Context, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, options []cloudprovider.Launchable, capacityType string) (*ec2.CreateFleetInput, error) {
	userData, err := p.renderUserData(ctx, nc, claim, capacityType)
	if err != nil {
		return nil, err
	}
	subnetOfZone := map[string]string{}
	for _, s := range nc.Status.Subnets { // sorted by free addresses: the first usable one of a zone wins
		if _, ok := subnetOfZone[s.Zone]; !ok && !p.unavailable.IsSubnetUnavailable(s.ID) {
			subnetOfZone[s.Zone] = s.ID
		}
	}
	var sgs []string
	for _, sg := range nc.Status.SecurityGroups {
		sgs = append(sgs, sg.ID)
	}
	overrides := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{} // AMI → overrides
	var amiOrder []string
	types := map[string]bool{}
	for _, o := range options {
		if o.Offering.CapacityType != capacityType {
			continue
		}
		if !types[o.InstanceType.Name] && len(types) == p.opts.MaxFleetInstanceTypes {
			continue
		}
		subnet, ok := subnetOfZone[o.Offering.Zone]
		ami := amiFor(nc, o.InstanceType)
		if !ok || ami == "" {
			continue
		}
		types[o.InstanceType.Name] = true
		if _, seen := overrides[ami]; !seen {
			amiOrder = append(amiOrder, ami)
		}
		overrides[ami] = append(overrides[ami], ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(o.InstanceType.Name), SubnetId: aws.String(subnet), AvailabilityZone: aws.String(o.Offering.Zone),
		})
	}
	if len(amiOrder) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{Err: fmt.Errorf("no %s offering of %s has a subnet and an AMI in EC2NodeClass %s", capacityType, claim.Name, nc.Name)}
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, ami := range amiOrder {
		name, err := p.templates.ensure(ctx, launchTemplateInput{nodeClass: nc, amiID: ami, userData: userData, securityGroups: sgs,
			instanceProfile: nc.InstanceProfileName(), tags: p.resourceTags(nc, claim), capacityType: capacityType})
		if err != nil {
			return nil, err
		}
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   overrides[ami],
		})
	}
	tags := ec2Tags(p.instanceTags(nc, claim))
	req := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		Context:               nc.Spec.Context,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
		},
	}
	if capacityType == v1.CapacityTypeSpot {
		req.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		req.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return req, nil
}

// resourceTags go on everything a launch creates (launch template, instance, volumes, network
// interface, spot request, fleet): spec.tags, then the tags a scoped IAM policy conditions on —
// kubernetes.io/cluster/<cluster>=owned, eks:eks-cluster-name, karpenter.sh/nodepool and
// karpenter.k8s.aws/ec2nodeclass — as Karpenter tags them.
func (p *CloudProvider) resourceTags(nc *awsv1.EC2NodeClass, claim *v1.NodeClaim) map[string]string {
	return resourceTags(p.opts.ClusterName, nc, claim)
}

func resourceTags(clusterName string, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim) map[string]string {
	tags := map[string]string{}
	for k, v := range nc.Spec.Tags {
		tags[k] = v
	}
	tags[awsv1.ClusterTagKeyPrefix+clusterName] = "owned"
	tags[awsv1.EKSClusterNameTagKey] = clusterName
	tags[awsv1.NodePoolTagKey] = claim.Labels[v1.NodePoolLabelKey]
	tags[awsv1.NodeClassTagKey] = nc.Name
	return tags
}

// instanceTags mark the instance (and its volumes and fleet) as this cluster's, launched for the claim.
func (p *CloudProvider) instanceTags(nc *awsv1.EC2NodeClass, claim *v1.NodeClaim) map[string]string {
	tags := p.resourceTags(nc, claim)
	tags[awsv1.NodeClaimTagKey] = claim.Name
	tags[awsv1.NameTagKey] = claim.Name
	return tags
}

// amiFor returns the newest AMI whose requirements the instance type meets (status.amis is
// newest first, deprecated last).
func amiFor(nc *awsv1.EC2NodeClass, it *catalog.InstanceType) string {
	for _, ami := range nc.Status.AMIs {
		ok := true
		for _, r := range ami.Requirements {
			v, has := it.Labels[r.Key]
			switch r.Operator {
			case corev1.NodeSelectorOpIn:
				ok = ok && has && contains(r.Values, v)
			case corev1.NodeSelectorOpNotIn:
				ok = ok && (!has || !contains(r.Values, v))
			case corev1.NodeSelectorOpExists:
				ok = ok && has
			case corev1.NodeSelectorOpDoesNotExist:
				ok = ok && !has
			}
		}
		if ok {
			return ami.ID
		}
	}
	return ""
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// fleetResult reads CreateFleet's answer and attributes each refusal to its scope: an offering
// without capacity (instance type × zone × capacity type), a subnet out of addresses, the spot
// capacity type (the account's spot instance limit, or no spot service-linked role), or — for a
// capacity error that names no override — every offering the request tried. Scoped refusals are
// marked here whether or not something launched; offering refusals are marked here when another
// offering launched, else by the launch path from the InsufficientCapacityError.
func (p *CloudProvider) fleetResult(ctx context.Context, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, its []*catalog.InstanceType, req *ec2.CreateFleetInput, out *ec2.CreateFleetOutput, capacityType string) (*v1.NodeClaim, error) {
	var refused []cloudprovider.UnavailableOffering
	var other, scoped []string
	denied := ""
	for _, e := range out.Errors {
		code, msg := aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage)
		var o *ec2types.FleetLaunchTemplateOverrides
		if e.LaunchTemplateAndOverrides != nil {
			o = e.LaunchTemplateAndOverrides.Overrides
		}
		switch {
		case code == unauthorizedCode:
			denied = msg
		case code == spotSLRCode:
			p.unavailable.MarkCapacityTypeUnavailable(v1.CapacityTypeSpot)
			scoped = append(scoped, spotSLRFix)
		case code == "MaxSpotInstanceCountExceeded":
			p.unavailable.MarkCapacityTypeUnavailable(v1.CapacityTypeSpot)
			scoped = append(scoped, "MaxSpotInstanceCountExceeded: the account's spot instance limit is reached; spot is skipped for "+cloudprovider.DefaultUnavailableTTL.String()+" (raise the limit through Service Quotas)")
		case code == "InsufficientFreeAddressesInSubnet" && o != nil && aws.ToString(o.SubnetId) != "":
			p.unavailable.MarkSubnetUnavailable(aws.ToString(o.SubnetId))
			scoped = append(scoped, "InsufficientFreeAddressesInSubnet: "+aws.ToString(o.SubnetId))
		case insufficientCapacityCodes[code] && o != nil:
			refused = append(refused, cloudprovider.UnavailableOffering{InstanceType: string(o.InstanceType), Zone: aws.ToString(o.AvailabilityZone), CapacityType: capacityType})
		case insufficientCapacityCodes[code]:
			refused = append(refused, requestOfferings(req, capacityType)...)
			other = append(other, code+" (no override named: every offering tried is marked): "+msg)
		default:
			other = append(other, code+": "+msg)
		}
	}
	for _, inst := range out.Instances {
		if len(inst.InstanceIds) == 0 {
			continue
		}
		for _, o := range refused {
			p.unavailable.MarkUnavailable(o)
		}
		zone := ""
		if lto := inst.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
			zone = aws.ToString(lto.Overrides.AvailabilityZone)
		}
		log.FromContext(ctx).Info("launched instance", "nodeclaim", claim.Name, "instance", inst.InstanceIds[0],
			"instanceType", string(inst.InstanceType), "zone", zone, "capacityType", capacityType)
		return p.launchedClaim(nc, claim, its, inst.InstanceIds[0], string(inst.InstanceType), zone, capacityType)
	}
	if denied != "" {
		return nil, unauthorizedError("CreateFleet launched no instance for "+claim.Name, denied)
	}
	reasons := append(append(scoped, other...), fmt.Sprintf("%d offerings without capacity", len(refused)))
	err := fmt.Errorf("CreateFleet launched no instance for %s: %s", claim.Name, strings.Join(reasons, "; "))
	if len(other) > 0 && len(refused) == 0 && len(scoped) == 0 {
		return nil, err
	}
	return nil, &cloudprovider.InsufficientCapacityError{Err: err, Offerings: refused}
}

// requestOfferings are the offerings a fleet request tried.
func requestOfferings(req *ec2.CreateFleetInput, capacityType string) []cloudprovider.UnavailableOffering {
	var out []cloudprovider.UnavailableOffering
	for _, cfg := range req.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			out = append(out, cloudprovider.UnavailableOffering{InstanceType: string(o.InstanceType), Zone: aws.ToString(o.AvailabilityZone), CapacityType: capacityType})
		}
	}
	return out
}

// launchedClaim is the claim as launched: provider ID, labels, capacity and allocatable of the type,
// the image and the NodeClass hash it was launched from.
func (p *CloudProvider) launchedClaim(nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, its []*catalog.InstanceType, id, instanceType, zone, capacityType string) (*v1.NodeClaim, error) {
	var it *catalog.InstanceType
	for _, candidate := range its {
		if candidate.Name == instanceType {
			it = candidate
		}
	}
	if it == nil {
		return nil, errors.New("CreateFleet launched " + instanceType + ", which the NodeClass does not offer")
	}
	l := cloudprovider.Launchable{InstanceType: it, Offering: catalog.Offering{Zone: zone, CapacityType: capacityType}}
	out := claim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range l.Labels() {
		out.Labels[k] = v
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = nc.Hash(p.opts.ClusterCABundle)
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
	out.Status.ProviderID = providerID(zone, id)
	out.Status.ImageID = amiFor(nc, it)
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable()
	return out, nil
}

// providerID is the kubelet's provider ID of an EC2 instance.
func providerID(zone, id string) string { return "aws:///" + zone + "/" + id }

// instanceID parses aws:///zone/i-… .
func instanceID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	_, id, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || !strings.HasPrefix(id, "i-") {
		return "", fmt.Errorf("provider id %q is not an EC2 provider id (aws:///<zone>/<instance id>)", providerID)
	}
	return id, nil
}
