package snapshot

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

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

// The claims of a batch admit the same instance types: a snapshot reads each set of requirements'
// offerings from the catalog once, not once per in-flight claim (at 20,000 pods thousands of claims
// wait for their launch, each read again by every batch's snapshot: most of Build's CPU). Every
// in-flight claim still gets the smallest allocatable its own requirements admit.
func TestInFlightClaimsReadTheirTypesOncePerSnapshot(t *testing.T) {
	its := make([]*catalog.InstanceType, 0, 40)
	for i := range 40 {
		cpu := fmt.Sprint(2 + i%4*2)
		its = append(its, &catalog.InstanceType{Name: fmt.Sprintf("t%02d", i), Capacity: rl("cpu", cpu, "memory", "16Gi", "pods", "110"),
			Labels: map[string]string{v1.LabelArch: "amd64", "joist.dev/instance-cpu": cpu},
			Offerings: []catalog.Offering{{Zone: "z1", CapacityType: v1.CapacityTypeOnDemand, Price: 0.1 * float64(i+1), Available: true},
				{Zone: "z2", CapacityType: v1.CapacityTypeSpot, Price: 0.05 * float64(i+1), Available: true}}})
	}
	o := Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }}
	claims := func(n int) []*v1.NodeClaim {
		out := make([]*v1.NodeClaim, n)
		for i := range out {
			nc := claim(fmt.Sprintf("c%04d", i), "general", "")
			cpus := []string{"4", "6"}
			if i%2 == 1 {
				cpus = []string{"8"}
			}
			nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{ // a copy each, as a typed list holds them
				{Key: "joist.dev/instance-cpu", Operator: corev1.NodeSelectorOpIn, Values: cpus}}
			out[i] = nc
		}
		return out
	}
	build := func(ncs []*v1.NodeClaim) *Snapshot {
		s, err := Build(Cluster{NodePools: []*v1.NodePool{nodePool("general")}, NodeClaims: ncs}, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ncs := claims(10)
	for i, n := range build(ncs).Input.Nodes {
		want := smallestAllocatable(ncs[i], its)
		if cpu, wantCPU := n.Allocatable[corev1.ResourceCPU], want[corev1.ResourceCPU]; n.Name != ncs[i].Name || cpu.Cmp(wantCPU) != 0 {
			t.Errorf("in-flight node %s: cpu %s, want %s's smallest admitted, %s", n.Name, cpu.String(), ncs[i].Name, wantCPU.String())
		}
	}
	small, large := claims(100), claims(300)
	perClaim := (testing.AllocsPerRun(5, func() { build(large) }) - testing.AllocsPerRun(5, func() { build(small) })) / 200
	offerings := testing.AllocsPerRun(20, func() { smallestAllocatable(small[0], its) })
	t.Logf("Build: %.1f allocations per in-flight claim; reading one claim's offerings from the catalog: %.1f", perClaim, offerings)
	// Before: ~70 per claim (every claim's offerings read); now ~1 (its node in the input).
	if perClaim > offerings/10 {
		t.Errorf("Build allocated %.1f times per in-flight claim, against %.1f for one catalog read: each claim's types read again", perClaim, offerings)
	}
}
