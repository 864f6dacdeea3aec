package solver_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// TestZonesBeyond64Reported: the solver's zone bitmasks hold 64 zones; a catalog offering more
// must not drop the rest silently: the plan still places the pods (on the zones it holds) and the
// place pass reports what was left out.
func TestZonesBeyond64Reported(t *testing.T) {
	it := instanceType("big", "8", "32Gi", 0.4)
	it.Offerings = nil
	for z := 0; z < 70; z++ {
		it.Offerings = append(it.Offerings, catalog.Offering{Zone: fmt.Sprintf("zone-%02d", z), CapacityType: v1.CapacityTypeOnDemand, Price: 0.4, Available: true})
	}
	in := defaultInput(pods(4, "web", "1", "1Gi")...)
	in.NodePools[0] = poolInput(nodePool("default"), []*catalog.InstanceType{it})
	res := solve(t, in)
	mustPlaceAll(t, res)
	if len(res.Passes) == 0 || res.Passes[0].Name != "place" {
		t.Fatalf("first pass %+v, want place", res.Passes)
	}
	p := res.Passes[0]
	if !p.CutShort || !strings.Contains(p.Shortfall, "6 zone(s) beyond the first 64") {
		t.Fatalf("place pass report %+v: want the 6 zones beyond 64 reported", p)
	}
}

// zones70 is one instance type offered on demand in 70 zones, zone-00 … zone-69, the last the
// cheapest (so a solver that read a dropped zone as zone 0 would price zone-00 at its price).
func zones70() *catalog.InstanceType {
	it := instanceType("big", "8", "32Gi", 0.4)
	it.Offerings = nil
	for z := 0; z < 70; z++ {
		price := 0.4
		if z == 69 {
			price = 0.1
		}
		it.Offerings = append(it.Offerings, catalog.Offering{Zone: fmt.Sprintf("zone-%02d", z), CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true})
	}
	return it
}

// TestZonesBeyond64RefuseZoneDependentPods: above 64 zones the solver cannot count every zone,
// so a pod whose placement depends on its zone (node selection on the zone key, a zone topology
// spread) is refused with CauseDomainLimit and a reason naming the limit and the fix, never
// placed on a miscounted or mispriced zone; a pod free of zones is still placed, in a zone the
// masks hold and at that zone's price.
func TestZonesBeyond64RefuseZoneDependentPods(t *testing.T) {
	sel := map[string]string{"app": "spread"}
	ps := pods(2, "free", "1", "1Gi")
	ps = append(ps, pod("pinned", "1", "1Gi", nodeSelector(corev1.LabelTopologyZone, "zone-69")))
	ps = append(ps, pods(3, "spread", "1", "1Gi", label("app", "spread"), spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, sel))...)
	in := defaultInput(ps...)
	in.NodePools[0] = poolInput(nodePool("default"), []*catalog.InstanceType{zones70()})
	res := solve(t, in)
	for _, name := range []string{"pinned", "spread-0", "spread-1", "spread-2"} {
		wantReason(t, res, name, "at most 64")
		for _, u := range res.Unschedulable {
			if u.Pod.Name == name && u.Cause != solver.CauseDomainLimit {
				t.Fatalf("%s: cause %s, want %s", name, u.Cause, solver.CauseDomainLimit)
			}
		}
	}
	wantReason(t, res, "pinned", "narrow the NodePools' topology.kubernetes.io/zone requirement")
	for _, name := range []string{"free-0", "free-1"} {
		n := nodeOf(res, name)
		if n == nil {
			t.Fatalf("%s not placed: %s", name, summary(res))
		}
		if n.Offering.Zone == "zone-69" || n.Offering.Price != 0.4 {
			t.Fatalf("%s on %s at $%.2f: want a zone the masks hold, at its price $0.40", name, n.Offering.Zone, n.Offering.Price)
		}
	}
}

// TestZonesBeyond64NotCountedWhenPoolsNarrow: a catalog offering 70 zones is fine when the
// NodePools admit at most 64 of them: nothing is left out and zone-dependent pods are placed.
func TestZonesBeyond64NotCountedWhenPoolsNarrow(t *testing.T) {
	var zones []string
	for z := 10; z < 70; z++ {
		zones = append(zones, fmt.Sprintf("zone-%02d", z))
	}
	in := defaultInput(pod("pinned", "1", "1Gi", nodeSelector(corev1.LabelTopologyZone, "zone-69")))
	in.NodePools[0] = poolInput(nodePool("default", poolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...)), []*catalog.InstanceType{zones70()})
	res := solve(t, in)
	mustPlaceAll(t, res)
	if p := res.Passes[0]; p.CutShort {
		t.Fatalf("place pass %+v: want nothing left out (the pool admits 60 zones)", p)
	}
	if n := nodeOf(res, "pinned"); n == nil || n.Offering.Zone != "zone-69" || n.Offering.Price != 0.1 {
		t.Fatalf("pinned: %+v, want zone-69 at $0.10", n)
	}
}
