package nomination

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// classPod is a pending pod of a class: its requests (cpu) and, for a class apart, a node selector.
func classPod(name, cpu string, selector map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

// planOf is a plan of the pods on a node of allocatable cpu (millicores), 110 pods.
func planOf(cpuMilli int64, pods ...*corev1.Pod) solver.NodeClaimPlan {
	var used int64
	for _, p := range pods {
		used += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	}
	it := &catalog.InstanceType{Name: fmt.Sprintf("t-%d", cpuMilli), Capacity: corev1.ResourceList{
		corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")}}
	return solver.NodeClaimPlan{InstanceType: it, Pods: pods, Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(used, resource.DecimalSI)}}
}

func podsNamed(prefix string, n int, cpu string, selector map[string]string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, classPod(fmt.Sprintf("%s-%d", prefix, i), cpu, selector))
	}
	return out
}

func uidsOf(set map[types.UID]string) []string {
	var out []string
	for uid := range set {
		out = append(out, string(uid))
	}
	slices.Sort(out)
	return out
}

// A batch of one interchangeable class on nodes of its own goes without nominations; one pod of
// another class in the batch (it could take the class's unheld room while its own node is not
// released), a pod of the class left unplaced (it competes for the slots), or more spare room than
// the fewest pods a node holds (pods filling it could empty that node) means every pod is nominated.
func TestInterchangeablePodsAreTheOnesThatNeedNoNomination(t *testing.T) {
	a := podsNamed("a", 8, "500m", nil) // two nodes of 2 cpu, exactly full
	plans := []solver.NodeClaimPlan{planOf(2000, a[:4]...), planOf(2000, a[4:]...)}
	if got := uidsOf(Interchangeable(plans, a)); !slices.Equal(got, uidsOf(classSet(a))) {
		t.Fatalf("unsteered %v, want every pod of the batch", got)
	}

	other := classPod("b-0", "250m", map[string]string{"x": "1"})
	mixed := append(slices.Clone(plans), planOf(250, other))
	if got := Interchangeable(mixed, append(slices.Clone(a), other)); len(got) != 0 {
		t.Errorf("a batch with a pod of another class: unsteered %v, want none", uidsOf(got))
	}

	extra := classPod("a-extra", "500m", nil)
	if got := Interchangeable(plans, append(slices.Clone(a), extra)); len(got) != 0 {
		t.Errorf("a pod of the class on no plan: unsteered %v, want none", uidsOf(got))
	}

	high := podsNamed("h", 4, "500m", nil)
	for _, p := range high {
		p.Spec.Priority = ptr.To[int32](10)
	}
	if got := Interchangeable([]solver.NodeClaimPlan{planOf(2000, high[:2]...), planOf(2000, a[:4]...)}, append(slices.Clone(high[:2]), a[:4]...)); len(got) != 0 {
		t.Errorf("two priorities: unsteered %v, want none", uidsOf(got))
	}

	thin := []solver.NodeClaimPlan{planOf(2000, a[:4]...), planOf(3500, a[4:6]...)}
	if got := Interchangeable(thin, a[:6]); len(got) != 0 {
		t.Errorf("spare room of 3 pods against a node of 2: unsteered %v, want none", uidsOf(got))
	}
}

func classSet(pods []*corev1.Pod) map[types.UID]string {
	out := map[types.UID]string{}
	for _, p := range pods {
		out[p.UID] = "x"
	}
	return out
}

// Pods that need no steering get no nomination at their node's release, the others of the batch
// do, and the node is released all the same. (A pod left pending RejectionGrace after the release is
// nominated all the same: the stall path's backstop.)
func TestReleaseWritesNoNominationForUnsteeredPods(t *testing.T) {
	opts := DefaultOptions()
	opts.RejectionGrace = time.Minute // no scheduler binds here: a stall's renomination must not come first
	h := start(t, opts)
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	free := []*corev1.Pod{h.pendingPod(t, "free-0", nil), h.pendingPod(t, "free-1", nil)}
	steered := h.pendingPod(t, "steered", nil)
	h.ctrl.Unsteered(map[types.UID]string{free[0].UID: "c", free[1].UID: "c"})
	h.ctrl.Plan("node-a", free)
	h.ctrl.Plan("node-b", []*corev1.Pod{steered})
	h.setReady(t, "node-a", true)
	h.setReady(t, "node-b", true)
	h.releasedWithPods(t, [2]string{"steered", "node-b"})
	eventually(t, "node-a released", 10*time.Second, func() (bool, string) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
		h.get(t, node)
		return !tainted(node), fmt.Sprintf("taints %v", node.Spec.Taints)
	})
	time.Sleep(500 * time.Millisecond) // the release's rewrite after the lift comes right after it
	for _, p := range free {
		h.get(t, p)
		if p.Status.NominatedNodeName != "" {
			t.Errorf("%s nominated to %q: it needs no steering", p.Name, p.Status.NominatedNodeName)
		}
	}
}

// An unsteered pod bound to another node of its class than the planned one frees its planned slot
// for a still-pending pod of its class planned on the node it took (bare pods: no workload to
// match), in the store only.
func TestOffPlanBindingSwapsAPodOfTheSameUnsteeredClass(t *testing.T) {
	opts := DefaultOptions()
	opts.RejectionGrace = time.Minute // as above: no stall renomination while the test binds
	h := start(t, opts)
	h.claimWithNode(t, "node-a", "batch-1", true)
	h.claimWithNode(t, "node-b", "batch-1", true)
	x, y := h.pendingPod(t, "x", nil), h.pendingPod(t, "y", nil)
	h.ctrl.Unsteered(map[types.UID]string{x.UID: "c", y.UID: "c"})
	h.ctrl.Plan("node-b", []*corev1.Pod{x})
	h.ctrl.Plan("node-a", []*corev1.Pod{y})
	eventually(t, "both nodes released", 10*time.Second, func() (bool, string) {
		return h.store.IsReleased("node-a") && h.store.IsReleased("node-b"), ""
	})
	if err := h.direct.SubResource("binding").Create(context.Background(), x, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: x.Name, Namespace: x.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "y takes x's slot on node-b", 10*time.Second, func() (bool, string) {
		claim, _ := h.store.ClaimOf(y.UID)
		return claim == "node-b", "y planned on " + claim
	})
	h.get(t, y)
	if y.Status.NominatedNodeName != "" {
		t.Errorf("y nominated to %q: the swap of an unsteered pod writes nothing", y.Status.NominatedNodeName)
	}
}
