package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// TestConsolidationBoundIsALowerBound: the bound that lets the planner skip a Solve never exceeds
// what Solve actually pays for new nodes, or the planner would skip sets that save money.
func TestConsolidationBoundIsALowerBound(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive cross-check at size: make test runs it, make test-unit (-short) does not")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	in := randomSmallNodes(rng, 60)
	p := newPlanner(in)
	b := newBound(p)
	checked := 0
	for trial := range 40 {
		var set []*cand
		for _, c := range p.cands {
			if rng.IntN(2) == 0 {
				set = append(set, c)
			}
		}
		lb := b.newNodesCost(set, nil)
		removing := map[string]bool{}
		var pods []*corev1.Pod
		for _, c := range set {
			removing[c.Node] = true
			pods = append(pods, c.movable...)
		}
		r := p.solveRemoving(removing, pods, set)
		if len(r.Unschedulable) > 0 || r.CostPerHour == 0 && lb == 0 {
			continue
		}
		checked++
		if lb > r.CostPerHour+1e-9 {
			t.Fatalf("trial %d (%d nodes): bound %.4f > Solve's new nodes %.4f", trial, len(set), lb, r.CostPerHour)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d sets needed new nodes; the test proves nothing", checked)
	}
}

// randomSmallNodes is a cluster of nodes of up to 4 vCPU from the default catalog, each running up
// to five pods, all of them candidates.
func randomSmallNodes(rng *rand.Rand, nodes int) ConsolidationInput {
	its := catalog.Default()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "test", Kind: "TestNodeClass", Name: "default"}
	in := ConsolidationInput{Input: Input{NodePools: []NodePoolInput{{NodePool: np, InstanceTypes: its}}}}
	var small []*catalog.InstanceType
	for _, it := range its {
		if c := it.Capacity.Cpu().Value(); c <= 4 && it.Labels["joist.dev/instance-gpu-count"] == "" {
			small = append(small, it)
		}
	}
	for i := range nodes {
		it := small[rng.IntN(len(small))]
		o := it.Offerings[rng.IntN(len(it.Offerings))]
		name := fmt.Sprintf("n%02d", i)
		n := ExistingNode{Name: name, NodePool: "p", Allocatable: it.Allocatable(), Labels: map[string]string{
			v1.LabelInstanceType: it.Name, v1.LabelTopologyZone: o.Zone, v1.CapacityTypeLabelKey: o.CapacityType, v1.LabelHostname: name,
		}}
		for k, v := range it.Labels {
			n.Labels[k] = v
		}
		for j := range rng.IntN(6) {
			n.Pods = append(n.Pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(50+rng.IntN(1500)), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(64+rng.IntN(4096))<<20, resource.BinarySI),
				}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			})
		}
		in.Nodes = append(in.Nodes, n)
		in.Candidates = append(in.Candidates, Candidate{Node: name})
	}
	return in
}

// TestBestFirstSearchMatchesSolvingEverySet: skipping the sets the bound proves hopeless gives the
// same best set as solving every set the search considers.
func TestBestFirstSearchMatchesSolvingEverySet(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive cross-check at size: make test runs it, make test-unit (-short) does not")
	}
	skipped := 0
	for seed := range 12 {
		rng := rand.New(rand.NewPCG(uint64(seed), 21))
		in := randomSmallNodes(rng, 6+rng.IntN(exhaustiveBelow-6))
		in.Budgets = map[string]DisruptionBudget{"p": {v1.DisruptionReasonUnderutilized: 1000}}
		p := newPlanner(in)
		list := p.repackList()
		var sets [][]*cand
		for k := 1; k <= len(list); k++ {
			sets = append(sets, list[:k])
		}
		for _, c := range list {
			sets = append(sets, []*cand{c})
		}
		fast := newSetSearch(p, list)
		fast.bestFirst(sets)
		all := newSetSearch(p, list)
		for _, set := range sets {
			all.consider(p.evaluate(set))
		}
		if fast.best.valid != all.best.valid || math.Abs(fast.best.savings-all.best.savings) > 1e-9 || len(fast.best.set) != len(all.best.set) {
			t.Fatalf("seed %d: best-first found %d nodes saving %.4f (valid %v), solving every set %d nodes saving %.4f (valid %v)",
				seed, len(fast.best.set), fast.best.savings, fast.best.valid, len(all.best.set), all.best.savings, all.best.valid)
		}
		if r := fast.report; r.Sets != len(sets) || r.Solved+r.Skipped != r.Sets {
			t.Fatalf("seed %d: report %+v for %d sets", seed, r, len(sets))
		}
		skipped += fast.report.Skipped
	}
	if skipped == 0 {
		t.Fatal("no set was skipped: the test proves nothing")
	}
}
