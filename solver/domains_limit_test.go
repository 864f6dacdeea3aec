package solver_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
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
