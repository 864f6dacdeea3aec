package nomination

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/snapshot"
)

func displacedPod(name, node, nominated string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
		Status: corev1.PodStatus{NominatedNodeName: nominated, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
}

// A pod of another batch (or of none yet) that the kube-scheduler binds into the room planned for a
// pod whose nomination it had cleared leaves that pod nominated to a full node. The next batch must
// plan the displaced pod (here: the snapshot hands it to the solver as pending), not count it as
// provided for until its rejection expires and it is planned alone on a node of its own — one extra
// c-1x per displaced pod in TestBurstsDoNotLaunchTwice. The pods that still fit keep their place,
// and the displaced pod's stale status.nominatedNodeName is not adopted again.
func TestPodsWhosePlannedRoomWasTakenArePlannedAgain(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := state.NewNominations()
	c := New(nil, nil, store, func() {}, clk, DefaultOptions())
	claim := registeredClaim("2")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "general-a", Labels: map[string]string{v1.NodePoolLabelKey: "general", v1.LabelHostname: "general-a"}},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://general-a"},
		Status:     corev1.NodeStatus{Allocatable: claim.Status.Allocatable},
	}
	// Four 500m pods planned onto the 2-cpu node; two bound as planned, a third (a-2) had its
	// nomination cleared, the fourth (a-3) still shows it. A pod of the next burst took a-2's room.
	a0, a1 := displacedPod("a-0", "general-a", ""), displacedPod("a-1", "general-a", "")
	a2, a3 := displacedPod("a-2", "", ""), displacedPod("a-3", "", "general-a")
	b0 := displacedPod("b-0", "general-a", "")
	c.Plan(claim.Name, []*corev1.Pod{a0, a1, a2, a3})
	store.MarkReleased(claim.Name, clk.Now())
	store.Bound(a0.UID, clk.Now())
	store.Bound(a1.UID, clk.Now())
	pods := []*corev1.Pod{a0, a1, a2, a3, b0}

	c.Sweep([]*v1.NodeClaim{claim}, pods)
	s, err := snapshot.Build(snapshot.Cluster{NodeClaims: []*v1.NodeClaim{claim}, Nodes: []*corev1.Node{node}, Pods: pods}, snapshot.Options{
		InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return catalog.Default(), nil },
		LiveClaim:     c.LiveClaim, Nomination: c.NominationOf, OwnNomination: c.Own,
	})
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, p := range s.Pending {
		pending = append(pending, p.Name)
	}
	if !slices.Equal(pending, []string{"a-3"}) {
		t.Errorf("pending pods handed to the solver = %v, want [a-3]: the room of one of a-2, a-3 was taken by b-0", pending)
	}
	if claimOf, ok := store.ClaimOf(a2.UID); !ok || claimOf != claim.Name {
		t.Errorf("a-2 nominated to %q (%v), want it kept on %s: the node still has room for one", claimOf, ok, claim.Name)
	}
	// A later batch: a-3 was not planned yet (no room anywhere) and must not be adopted again from
	// its stale status.nominatedNodeName.
	c.Sweep([]*v1.NodeClaim{claim}, pods)
	if _, ok := store.ClaimOf(a3.UID); ok {
		t.Errorf("a-3 nominated again to the full node from its stale status.nominatedNodeName")
	}
	// Planned again, it counts where the new plan put it.
	c.Plan("general-b", []*corev1.Pod{a3})
	c.Sweep([]*v1.NodeClaim{claim}, pods)
	if claimOf, _ := store.ClaimOf(a3.UID); claimOf != "general-b" {
		t.Errorf("a-3 nominated to %q after its new plan, want general-b", claimOf)
	}
}

// A displaced pod is remembered (its stale status.nominatedNodeName counts as Joist's) only while
// it is pending: one that finished without binding (its Job failed it, say) is planned by no batch
// again, and Sweep forgets it with the pods that bound or went. Sweep reads the pods once for both
// the displaced set and the displaced sweep's room count.
func TestDisplacedPodThatFinishedIsForgotten(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := state.NewNominations()
	c := New(nil, nil, store, func() {}, clk, DefaultOptions())
	claim := registeredClaim("1")
	// Two 500m pods planned onto the 1-cpu node; a pod of another burst took the room of one.
	a0, a1 := displacedPod("a-0", "", "general-a"), displacedPod("a-1", "", "general-a")
	b0 := displacedPod("b-0", "general-a", "")
	c.Plan(claim.Name, []*corev1.Pod{a0, a1})
	c.Sweep([]*v1.NodeClaim{claim}, []*corev1.Pod{a0, a1, b0})
	if !c.Own(a1) || store.Known(a1.UID) {
		t.Fatalf("a-1 displaced = %v, nominated = %v; want it displaced (b-0 took its room), not nominated", c.Own(a1), store.Known(a1.UID))
	}
	failed := a1.DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	c.Sweep([]*v1.NodeClaim{claim}, []*corev1.Pod{a0, failed, b0})
	if c.Own(failed) {
		t.Errorf("a-1 finished without binding and is still remembered as displaced")
	}
	if claimOf, _ := store.ClaimOf(a0.UID); claimOf != claim.Name {
		t.Errorf("a-0 nominated to %q, want %s: it still fits beside b-0", claimOf, claim.Name)
	}
}

// registeredClaim is NodeClaim general-a of pool general, registered as node general-a with cpu
// allocatable (8Gi, 110 pods).
func registeredClaim(cpu string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "general-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Status: v1.NodeClaimStatus{NodeName: "general-a", ProviderID: "kwok://general-a", Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
}
