package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// The command executed a moment ago left node a draining, its pod not yet evicted. The next plan
// must keep room for that pod: b and c (one 4-cpu type, 1.5 cpu used each) could merge without it,
// but not with it — merging would leave the evicted pod nowhere to go but a new node.
func TestPlanKeepsRoomForPodsOfADrainingNode(t *testing.T) {
	const itName = "c-4x-amd64-linux"
	var it *catalog.InstanceType
	for _, x := range catalog.Default() {
		if x.Name == itName {
			it = x
		}
	}
	if it == nil {
		t.Fatalf("catalog has no %s", itName)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{itName}}}}}}}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	node := func(name string, pods ...*corev1.Pod) solver.ExistingNode {
		labels := map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: it.Offerings[0].Zone,
			v1.CapacityTypeLabelKey: it.Offerings[0].CapacityType, v1.LabelInstanceType: it.Name, v1.NodePoolLabelKey: "general"}
		for k, v := range it.Labels {
			labels[k] = v
		}
		return solver.ExistingNode{Name: name, NodeClaim: name, NodePool: "general", Labels: labels, Allocatable: it.Allocatable(), Pods: pods}
	}
	in := solver.Input{NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: catalog.Default()}},
		Nodes: []solver.ExistingNode{node("b", pod("b-0", "b")), node("c", pod("c-0", "c"))}}
	deleting := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", DeletionTimestamp: &metav1.Time{Time: time.Now()}}}
	deleting.Status.NodeName = "a"
	cl := &cluster{claims: []*v1.NodeClaim{deleting}, nodes: map[string]*corev1.Node{"a": {ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
		podsByNode: map[string][]*corev1.Pod{"a": {pod("a-0", "a")}}}
	plan := func(in solver.Input) solver.ConsolidationPlan {
		return solver.Consolidate(solver.ConsolidationInput{Input: in, Candidates: []solver.Candidate{{Node: "b"}, {Node: "c"}},
			Budgets: map[string]solver.DisruptionBudget{"general": {v1.DisruptionReasonEmpty: 2, v1.DisruptionReasonUnderutilized: 2}}})
	}

	if got := plan(in); len(got.Commands) != 1 || len(got.Commands[0].Delete) != 1 {
		t.Fatalf("without the draining node's pod the plan should merge b and c: %+v", got.Commands)
	}
	displaced := displacedPods(cl, nil, nil, solver.Input{})
	if len(displaced) != 1 || displaced[0].Name != "a-0" {
		t.Fatalf("displaced pods: %v", displaced)
	}
	if got := plan(disruptionpolicy.WithDisplaced(in, displaced)); len(got.Commands) != 0 {
		t.Errorf("a plan that counts the draining node's pod has no room to merge, got %+v", got.Commands)
	}
	if len(in.Nodes[0].Pods)+len(in.Nodes[1].Pods) != 2 {
		t.Errorf("WithDisplaced changed the snapshot it was given")
	}
}
