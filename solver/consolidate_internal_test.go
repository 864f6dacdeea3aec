package solver

import (
	"fmt"
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
	its := catalog.Default()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "test", Kind: "TestNodeClass", Name: "default"}
	rng := rand.New(rand.NewPCG(1, 2))
	in := ConsolidationInput{Input: Input{NodePools: []NodePoolInput{{NodePool: np, InstanceTypes: its}}}}
	var small []*catalog.InstanceType
	for _, it := range its {
		if c := it.Capacity.Cpu().Value(); c <= 4 && it.Labels["joist.dev/instance-gpu-count"] == "" {
			small = append(small, it)
		}
	}
	for i := range 60 {
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
