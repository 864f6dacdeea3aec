package snapshot

import (
	"fmt"
	"testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// An in-flight claim's allocatable is the type's, whatever the number of its offerings, and is
// computed once per type: a type offered in eight zones costs no more maps than one offered in one.
func TestSmallestAllocatableOncePerType(t *testing.T) {
	withOfferings := func(n int) []*catalog.InstanceType {
		its := testTypes()
		its[0].Overhead = rl("cpu", "200m")
		its[0].Offerings = nil
		for i := range n {
			its[0].Offerings = append(its[0].Offerings, catalog.Offering{Zone: fmt.Sprintf("z%d", i), CapacityType: v1.CapacityTypeOnDemand, Price: 0.2, Available: true})
		}
		return its
	}
	nc := claim("c", "general", "")
	one, eight := withOfferings(1), withOfferings(8)
	got := smallestAllocatable(nc, eight)
	if cpu := got["cpu"]; cpu.String() != "3800m" || len(got) != 3 {
		t.Fatalf("allocatable %v, want the type's capacity less its overhead (cpu 3800m)", got)
	}
	allocs := func(its []*catalog.InstanceType) float64 {
		return testing.AllocsPerRun(20, func() { smallestAllocatable(nc, its) })
	}
	// Seven more offerings grow the offering list (a few appends); an allocatable map per offering
	// adds at least one more allocation each.
	if a1, a8 := allocs(one), allocs(eight); a8-a1 >= 7 {
		t.Errorf("%.0f allocations with eight offerings against %.0f with one: an allocatable per offering", a8, a1)
	}
}
