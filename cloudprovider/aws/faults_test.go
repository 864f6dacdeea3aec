package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

func spotOrOnDemand() []v1.NodeSelectorRequirementWithMinValues {
	return []v1.NodeSelectorRequirementWithMinValues{
		req(v1.LabelInstanceType, "In", "m5.large", "c5.large"), req(v1.CapacityTypeLabelKey, "In", "spot", "on-demand"),
	}
}

// A fresh account without the spot service-linked role: the spot fleet fails, spot is marked
// unavailable as a whole, the error names the fix, and the next claim launches on-demand.
func TestMissingSpotServiceLinkedRoleFallsBackToOnDemandAndNamesTheFix(t *testing.T) {
	w := newWorld(t)
	w.aws.RemoveSpotServiceLinkedRole()
	w.apply(t, nodeClass("default"))
	ctx := context.Background()
	_, err := w.provider.Create(ctx, claim("first", spotOrOnDemand()...))
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || !strings.Contains(err.Error(), "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com") {
		t.Fatalf("Create = %v, want an insufficient-capacity error naming the service-linked role to create", err)
	}
	for _, zone := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		if !w.unavailable.IsUnavailable(cloudprovider.UnavailableOffering{InstanceType: "r5.large", Zone: zone, CapacityType: v1.CapacityTypeSpot}) {
			t.Errorf("spot in %s is still available after the service-linked-role error", zone)
		}
	}
	next, err := w.provider.Create(ctx, claim("second", spotOrOnDemand()...))
	if err != nil || next.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeOnDemand {
		t.Fatalf("next Create = %v, %v; want an on-demand launch", next, err)
	}
}

// The account's spot instance limit: spot is marked unavailable for the capacity type, not for the
// offerings the fleet happened to try.
func TestSpotInstanceLimitMarksTheCapacityType(t *testing.T) {
	w := newWorld(t)
	w.aws.SetSpotInstanceLimit(0)
	w.apply(t, nodeClass("default"))
	_, err := w.provider.Create(context.Background(), claim("limited", spotOrOnDemand()...))
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "MaxSpotInstanceCountExceeded") {
		t.Fatalf("Create = %v", err)
	}
	if !w.unavailable.IsUnavailable(cloudprovider.UnavailableOffering{InstanceType: "g4dn.xlarge", Zone: "us-west-2c", CapacityType: v1.CapacityTypeSpot}) {
		t.Errorf("a spot offering the fleet did not try is still available")
	}
	if w.unavailable.IsUnavailable(cloudprovider.UnavailableOffering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: v1.CapacityTypeOnDemand}) {
		t.Errorf("on-demand was marked unavailable by a spot limit")
	}
}

// A subnet out of addresses is skipped (its zone's other subnet is used; a zone with none left
// offers nothing), the offerings themselves stay available.
func TestSubnetOutOfAddressesIsSkipped(t *testing.T) {
	w := newWorld(t)
	w.aws.ExhaustSubnet("subnet-00a")
	w.apply(t, nodeClass("default"))
	ctx := context.Background()
	zoneA := append(spotOrOnDemand()[:1], req(v1.CapacityTypeLabelKey, "In", "on-demand"), req(v1.LabelTopologyZone, "In", "us-west-2a"))
	_, err := w.provider.Create(ctx, claim("in-a", zoneA...))
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "InsufficientFreeAddressesInSubnet: subnet-00a") {
		t.Fatalf("Create = %v", err)
	}
	if !w.unavailable.IsSubnetUnavailable("subnet-00a") {
		t.Errorf("subnet-00a not marked")
	}
	if w.unavailable.IsUnavailable(cloudprovider.UnavailableOffering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: v1.CapacityTypeOnDemand}) {
		t.Errorf("the offering was marked for the subnet's exhaustion")
	}
	fleets := len(w.aws.Calls("CreateFleet"))
	if _, err := w.provider.Create(ctx, claim("in-a-again", zoneA...)); !cloudprovider.IsInsufficientCapacityError(err) || len(w.aws.Calls("CreateFleet")) != fleets {
		t.Errorf("a zone whose only subnet is exhausted: Create = %v after %d more fleets, want no fleet", err, len(w.aws.Calls("CreateFleet"))-fleets)
	}
	anywhere, err := w.provider.Create(ctx, claim("anywhere", spotOrOnDemand()[0], req(v1.CapacityTypeLabelKey, "In", "on-demand")))
	if err != nil || anywhere.Labels[v1.LabelTopologyZone] == "us-west-2a" {
		t.Errorf("Create = %v, %v; want a launch outside us-west-2a", anywhere, err)
	}
}

// An insufficient-capacity error naming no override marks every offering the fleet tried, so the
// next claim does not send the same request again.
func TestCapacityErrorWithoutOverridesMarksEveryOfferingTried(t *testing.T) {
	w := newWorld(t)
	w.aws.FailFleetsWithoutOverrides("InsufficientInstanceCapacity", 1)
	w.apply(t, nodeClass("default"))
	reqs := []v1.NodeSelectorRequirementWithMinValues{req(v1.LabelInstanceType, "In", "m5.large"), req(v1.CapacityTypeLabelKey, "In", "on-demand")}
	_, err := w.provider.Create(context.Background(), claim("bare", reqs...))
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 3 {
		t.Fatalf("Create = %v, want an insufficient-capacity error naming the 3 offerings tried", err)
	}
	for _, o := range ice.Offerings {
		w.unavailable.MarkUnavailable(o) // as the launch path does
	}
	fleets := len(w.aws.Calls("CreateFleet"))
	if _, err := w.provider.Create(context.Background(), claim("bare-2", reqs...)); !cloudprovider.IsInsufficientCapacityError(err) || len(w.aws.Calls("CreateFleet")) != fleets {
		t.Errorf("second Create = %v with %d more fleets; want no fleet for offerings just refused", err, len(w.aws.Calls("CreateFleet"))-fleets)
	}
}

// EC2 throttles the account while the instance-type cache is due for a refresh: the cached types
// keep being served (provisioning goes on), an event on the EC2NodeClass says so once, and the
// refresh is retried later rather than on every call.
func TestThrottledInstanceTypeRefreshServesTheCachedTypes(t *testing.T) {
	w := newWorld(t)
	recorder := events.NewFakeRecorder(10)
	w.provider.UseEventRecorder(recorder)
	w.apply(t, nodeClass("default"))
	ctx := context.Background()
	np := &v1.NodePool{}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	fresh, err := w.provider.GetInstanceTypes(ctx, np)
	if err != nil || len(fresh) == 0 {
		t.Fatalf("GetInstanceTypes = %d types, %v", len(fresh), err)
	}
	w.clock.Step(6 * time.Minute)
	w.aws.Throttle("DescribeInstanceTypes", 1000)
	for range 3 {
		stale, err := w.provider.GetInstanceTypes(ctx, np)
		if err != nil || len(stale) != len(fresh) {
			t.Fatalf("GetInstanceTypes while throttled = %d types, %v; want the %d cached ones", len(stale), err, len(fresh))
		}
	}
	if n := len(w.aws.Calls("DescribeInstanceTypes")); n > 1+5 { // the first read, then one refresh of 5 SDK attempts
		t.Errorf("DescribeInstanceTypes calls = %d: a failed refresh is retried on every call", n)
	}
	select {
	case e := <-recorder.Events:
		if !strings.Contains(e, "InstanceTypesStale") || !strings.Contains(e, "RequestLimitExceeded") {
			t.Errorf("event %q, want InstanceTypesStale naming the error", e)
		}
	default:
		t.Errorf("no event for stale instance types")
	}
	if len(recorder.Events) != 0 {
		t.Errorf("%d more events: want one per failure streak", len(recorder.Events))
	}
}
