package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

func TestNodePoolWeights(t *testing.T) {
	cheap := nodePool("cheap", poolWeight(10))
	preferred := nodePool("preferred", poolWeight(50))
	pricey := []*catalog.InstanceType{instanceType("x-4", "4", "16Gi", 1.0)}
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi")},
		NodePools: []solver.NodePoolInput{poolInput(cheap, standardTypes()), poolInput(preferred, pricey)}}
	if got := nodeOf(solve(t, in), "p").NodePool; got != "preferred" {
		t.Fatalf("pool %s, want the higher-weight pool", got)
	}
	// A pod the heavy pool cannot take falls through to the next one.
	in.Pods = []*corev1.Pod{pod("big", "10", "1Gi")}
	if got := nodeOf(solve(t, in), "big").NodePool; got != "cheap" {
		t.Fatalf("pool %s, want cheap for a pod too large for preferred", got)
	}
}

func TestNodePoolLimits(t *testing.T) {
	np := nodePool("team-a", func(np *v1.NodePool) { np.Spec.Limits = v1.Limits(rl("cpu", "200")) })
	in := solver.Input{Pods: pods(20, "p", "1", "1Gi"),
		NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: standardTypes(), Remaining: rl("cpu", "8")}}}
	r := solve(t, in)
	if scheduledCount(r) != 8 {
		t.Fatalf("want 8 pods within 8 remaining cpu\n%s", summary(r))
	}
	wantReason(t, r, "p-9", "NodePool team-a would exceed limits.cpu=200")
	// A pool at its limit hands the pods to the next pool.
	other := nodePool("overflow")
	in.NodePools = append(in.NodePools, poolInput(other, standardTypes()))
	mustPlaceAll(t, solve(t, in))
}

func TestMinValues(t *testing.T) {
	withMin := func(n int) func(*v1.NodePool) {
		return func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
				Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpExists, MinValues: &n})
		}
	}
	in := solver.Input{Pods: pods(12, "p", "1", "1Gi"), NodePools: []solver.NodePoolInput{poolInput(nodePool("default", withMin(3)), standardTypes())}}
	r := solve(t, in)
	mustPlaceAll(t, r)
	for _, nc := range r.NewNodeClaims {
		if len(nc.InstanceTypeOptions) < 3 {
			t.Fatalf("node keeps %d options, minValues is 3\n%s", len(nc.InstanceTypeOptions), summary(r))
		}
	}
	in.NodePools = []solver.NodePoolInput{poolInput(nodePool("default", withMin(10)), standardTypes())}
	wantReason(t, solve(t, in), "p-0", "minValues=10")
}

func TestExistingNodesFirst(t *testing.T) {
	in := defaultInput(pods(3, "p", "1", "1Gi")...)
	busy := pod("busy", "3", "1Gi")
	in.Nodes = []solver.ExistingNode{existingNode("node-1", "zone-a", "4", "8Gi", busy)}
	claim := existingNode("claim-1", "zone-b", "1", "8Gi")
	claim.InFlight, claim.NodeClaim = true, "claim-1"
	in.Nodes = append(in.Nodes, claim)
	r := solve(t, in)
	mustPlaceAll(t, r)
	if len(r.NewNodeClaims) != 1 || len(r.ExistingPlacements) != 2 {
		t.Fatalf("want one pod on node-1 (1 cpu left), one on the in-flight claim, one new\n%s", summary(r))
	}
	// Existing taints and labels count.
	tainted := existingNode("tainted", "zone-a", "8", "8Gi")
	tainted.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	in = defaultInput(pod("p", "1", "1Gi"))
	in.Nodes = []solver.ExistingNode{tainted}
	if existingOf(solve(t, in), "p") != "" {
		t.Fatal("pod landed on a node whose taint it does not tolerate")
	}
	in.Pods = []*corev1.Pod{pod("q", "1", "1Gi", toleration("maintenance", "", ""))}
	if existingOf(solve(t, in), "q") != "tainted" {
		t.Fatal("a tolerating pod should use the existing node")
	}
	in.Pods = []*corev1.Pod{pod("arm", "1", "1Gi", nodeSelector(v1.LabelArch, "arm64"), toleration("maintenance", "", ""))}
	in.NodePools = nil
	wantReason(t, solve(t, in), "arm", "no existing node matches")
}

func TestOfferingConsistentWithRequirements(t *testing.T) {
	types := []*catalog.InstanceType{
		instanceType("m-2", "2", "8Gi", 0.10, onlyOnDemand),
		instanceType("m-4", "4", "16Gi", 0.20, onlyZones("zone-b")),
	}
	in := solver.Input{Pods: pods(3, "p", "1", "1Gi"), NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), types)}}
	r := solve(t, in)
	mustPlaceAll(t, r)
	// 3 cpu needs m-4, whose cheapest offering is spot in zone-b at 0.12.
	nc := r.NewNodeClaims[0]
	if nc.InstanceType.Name != "m-4" || nc.Offering.Zone != "zone-b" || nc.Offering.CapacityType != "spot" {
		t.Fatalf("got %s %+v\n%s", nc.InstanceType.Name, nc.Offering, summary(r))
	}
}

func TestLowerBoundOnUniformWorkload(t *testing.T) {
	r := solve(t, defaultInput(pods(100, "p", "1", "2Gi")...))
	mustPlaceAll(t, r)
	if r.LowerBoundPerHour <= 0 || r.CostPerHour > 1.03*r.LowerBoundPerHour {
		t.Fatalf("cost %.4f vs lower bound %.4f: ratio above 1.03\n%s", r.CostPerHour, r.LowerBoundPerHour, summary(r))
	}
	// 100 cpu at 0.03 per spot cpu is 3.00 exactly.
	if r.LowerBoundPerHour < 2.999 || r.LowerBoundPerHour > 3.001 {
		t.Fatalf("lower bound %.4f, want 3.00", r.LowerBoundPerHour)
	}
}

func TestSplitsOvershootingNode(t *testing.T) {
	// 10 × 500m = 5 cpu: one m-8 costs 0.24; m-4 + m-1 cost 0.15.
	r := solve(t, defaultInput(pods(10, "web", "500m", "1Gi")...))
	if r.CostPerHour > 0.1501 {
		t.Fatalf("cost %.4f, want 0.15\n%s", r.CostPerHour, summary(r))
	}
}

func TestEmptyInput(t *testing.T) {
	r := solve(t, solver.Input{})
	if len(r.NewNodeClaims) != 0 || r.CostPerHour != 0 {
		t.Fatalf("empty input gave %s", summary(r))
	}
}
