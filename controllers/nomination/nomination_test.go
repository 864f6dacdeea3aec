package nomination

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/test/env"
)

func TestMain(m *testing.M) {
	if os.Getenv("NOMINATION_TEST_LOG") != "" {
		log.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.Level(-2))))
	} else {
		log.SetLogger(logr.Discard())
	}
	os.Exit(m.Run())
}

// harness is the nomination controller alone in a manager on a real apiserver (no scheduler: the
// test plays it), with replan counting the batches it asks for.
type harness struct {
	kube    client.Client // the manager's cached client
	direct  client.Client
	ctrl    *Controller
	store   *state.Nominations
	replans atomic.Int32
}

func start(t *testing.T, opts Options) *harness {
	t.Helper()
	return startWith(t, opts, true)
}

// startWith is start, with the controller's loops registered in the manager or not (a test then
// calls Release itself).
func startWith(t *testing.T, opts Options, register bool) *harness {
	t.Helper()
	return startWithReader(t, opts, register, nil)
}

// startWithReader is startWith with the controller's live reader wrapped by wrap (when not nil).
func startWithReader(t *testing.T, opts Options, register bool, wrap func(client.Reader) client.Reader) *harness {
	t.Helper()
	e := env.New(t, env.Options{})
	h := &harness{direct: e.Client, store: state.NewNominations()}
	e.StartTestManager(t, func(mgr ctrl.Manager) error {
		h.kube = mgr.GetClient()
		h.ctrl = New(mgr.GetClient(), mgr.GetCache(), h.store, func() { h.replans.Add(1) }, clock.RealClock{}, opts)
		if wrap != nil {
			h.ctrl.live = wrap(mgr.GetAPIReader())
		}
		if !register {
			return nil
		}
		return h.ctrl.Register(mgr)
	})
	return h
}

// claimWithNode creates a registered NodeClaim of batch and its Node, still carrying the
// unregistered taint, Ready or not.
func (h *harness) claimWithNode(t *testing.T, name, batch string, ready bool) {
	t.Helper()
	h.claimWithStartupTaints(t, name, batch, ready)
}

// claimWithStartupTaints is claimWithNode for a claim with startup taints, which its node carries.
func (h *harness) claimWithStartupTaints(t *testing.T, name, batch string, ready bool, startup ...corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	providerID := "kwok://" + name
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.ProvisioningBatchLabelKey: batch}},
		Spec: v1.NodeClaimSpec{StartupTaints: startup, Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}}
	if err := h.direct.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	if err := h.direct.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := h.direct.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = append([]corev1.Taint{v1.UnregisteredNoExecuteTaint}, startup...) // the apiserver added not-ready; the test decides
	if err := h.direct.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	h.setReady(t, name, ready)
}

func (h *harness) setReady(t *testing.T, name string, ready bool) {
	t.Helper()
	node := &corev1.Node{}
	if err := h.direct.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.Now()}}
	if err := h.direct.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
}

// pendingPod creates a pod the scheduler has not tried yet.
func (h *harness) pendingPod(t *testing.T, name string, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	if err := h.direct.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func (h *harness) get(t *testing.T, obj client.Object) {
	t.Helper()
	if err := h.direct.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
}

func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey })
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (%s)", what, timeout, last)
	}
}

// spreadPod creates a pending pod spread over zones: where it may go depends on other nodes' pods.
func (h *harness) spreadPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "spread"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}}}
	if err := h.direct.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// releasedWithPods waits until each node has lost its unregistered taint and its pod is nominated
// to it.
func (h *harness) releasedWithPods(t *testing.T, pairs ...[2]string) {
	t.Helper()
	eventually(t, "nodes released with their pods nominated", 20*time.Second, func() (bool, string) {
		var out string
		released := true
		for _, p := range pairs {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: p[1]}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p[0], Namespace: "default"}}
			h.get(t, node)
			h.get(t, pod)
			released = released && !tainted(node) && pod.Status.NominatedNodeName == p[1]
			out += fmt.Sprintf("%s tainted=%v %s→%q; ", p[1], tainted(node), p[0], pod.Status.NominatedNodeName)
		}
		return released, out
	})
}

// A node is released as soon as it is Ready, its planned pod nominated to it first, while the rest
// of its provisioning batch is still coming up: the kube-scheduler can bind its pods meanwhile.
func TestNodeIsReleasedAsItTurnsReady(t *testing.T) {
	h := start(t, nominating())
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	podA, podB := h.pendingPod(t, "pod-a", nil), h.pendingPod(t, "pod-b", nil)
	h.ctrl.Plan("node-a", []*corev1.Pod{podA})
	h.ctrl.Plan("node-b", []*corev1.Pod{podB})

	h.setReady(t, "node-a", true)
	h.releasedWithPods(t, [2]string{"pod-a", "node-a"})
	nodeB := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	h.get(t, nodeB)
	h.get(t, podB)
	if !tainted(nodeB) || podB.Status.NominatedNodeName != "" {
		t.Fatalf("node-b released before it was Ready: taints %v, pod-b nominated to %q", nodeB.Spec.Taints, podB.Status.NominatedNodeName)
	}
	if !h.store.IsReleased("node-a") || h.store.IsReleased("node-b") {
		t.Errorf("released marks: node-a %v (want true), node-b %v (want false)", h.store.IsReleased("node-a"), h.store.IsReleased("node-b"))
	}

	h.setReady(t, "node-b", true)
	h.releasedWithPods(t, [2]string{"pod-a", "node-a"}, [2]string{"pod-b", "node-b"})
	if !h.store.IsReleased("node-b") {
		t.Error("node-b released but not marked released: its pods' rejections would go unseen")
	}
}

// Nodes that turn Ready together are nominated and released in rounds of about
// nominationParallelism pods: the first node goes to the scheduler as soon as the cache shows its
// pods' nominations, before the next node's are written (etcd's revisions order the writes).
func TestNodesAreReleasedInRoundsOfNominations(t *testing.T) {
	h := start(t, nominating())
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	planned := map[string][]*corev1.Pod{}
	for _, node := range []string{"node-a", "node-b"} {
		for i := range nominationParallelism {
			planned[node] = append(planned[node], h.pendingPod(t, fmt.Sprintf("%s-%d", node, i), nil))
		}
		h.ctrl.Plan(node, planned[node])
	}
	h.setReady(t, "node-a", true)
	h.setReady(t, "node-b", true)
	h.releasedWithPods(t, [2]string{"node-a-0", "node-a"}, [2]string{"node-b-0", "node-b"})
	nodeA := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	h.get(t, nodeA)
	releasedA := revision(t, nodeA)
	for _, pod := range planned["node-b"] {
		h.get(t, pod)
		if pod.Status.NominatedNodeName != "node-b" {
			t.Fatalf("%s nominated to %q, want node-b", pod.Name, pod.Status.NominatedNodeName)
		}
		if rv := revision(t, pod); rv < releasedA {
			t.Fatalf("%s was nominated (revision %d) before node-a was released (revision %d): all nominations were written before any node went out", pod.Name, rv, releasedA)
		}
	}
}

func revision(t *testing.T, obj client.Object) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

// A batch with a pod whose placement counts other nodes' pods (here a zone spread) is released
// together: while one node is not Ready the other keeps its unregistered taint and its pod gets no
// nomination; once both are Ready, every planned pod is nominated to its node and both taints are
// lifted.
func TestBatchWithSpreadPodsIsReleasedTogether(t *testing.T) {
	h := start(t, nominating())
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	podA, podB := h.spreadPod(t, "pod-a"), h.spreadPod(t, "pod-b")
	h.ctrl.Plan("node-a", []*corev1.Pod{podA})
	h.ctrl.Plan("node-b", []*corev1.Pod{podB})

	// node-a is Ready but its batch is not: nothing moves.
	h.setReady(t, "node-a", true)
	time.Sleep(time.Second)
	nodeA := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	h.get(t, nodeA)
	h.get(t, podA)
	if !tainted(nodeA) || podA.Status.NominatedNodeName != "" {
		t.Fatalf("node-a released before the rest of its batch: taints %v, pod-a nominated to %q", nodeA.Spec.Taints, podA.Status.NominatedNodeName)
	}

	h.setReady(t, "node-b", true)
	h.releasedWithPods(t, [2]string{"pod-a", "node-a"}, [2]string{"pod-b", "node-b"})
	if !h.store.IsReleased("node-a") || !h.store.IsReleased("node-b") {
		t.Error("released claims not marked released: their pods' rejections would go unseen")
	}
}

// rejectPod plays the kube-scheduler failing to place the pod: nominatedNodeName cleared, marked
// unschedulable.
func (h *harness) rejectPod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	h.get(t, pod)
	pod.Status.NominatedNodeName = ""
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: fmt.Sprintf("0/1 nodes are available (attempt at %s)", time.Now().Format(time.RFC3339Nano))}}
	if err := h.direct.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// A pod the scheduler turns away from its released node gets its nomination written once more; turned
// away again, it keeps its nomination for RejectionGrace and is then planned again: the provisioner
// is asked for a batch and, after the sweep, the pod no longer counts on the claim but is known as
// Joist's stale nomination.
func TestRejectionLeadsToReplan(t *testing.T) {
	h, pod := releasedWithPlannedPod(t, 500*time.Millisecond, nil)

	h.rejectPod(t, pod)
	eventually(t, "rejected pod nominated once more", 10*time.Second, func() (bool, string) {
		h.get(t, pod)
		return pod.Status.NominatedNodeName == "node-a", pod.Status.NominatedNodeName
	})
	if n := h.replans.Load(); n != 0 {
		t.Fatalf("%d re-plans after the first rejection; it is renominated instead", n)
	}

	h.rejectPod(t, pod)
	eventually(t, "second rejection re-planned after the grace", 10*time.Second, func() (bool, string) {
		return h.replans.Load() > 0, fmt.Sprintf("%d replans", h.replans.Load())
	})
	if _, ok := h.store.ClaimOf(pod.UID); !ok {
		t.Fatal("the nomination was dropped before the sweep; only Sweep may drop it")
	}
	h.get(t, pod)
	h.ctrl.Sweep(nil, []*corev1.Pod{pod})
	if claim, ok := h.store.ClaimOf(pod.UID); ok {
		t.Errorf("after the sweep the pod still counts on claim %s", claim)
	}
	if !h.ctrl.Own(pod) {
		t.Error("an expired nomination must still be known as Joist's (a stale field, not a preemption)")
	}
	h.get(t, pod)
	if pod.Status.NominatedNodeName != "" {
		t.Errorf("the second rejection was renominated again (%q); a pod is renominated once", pod.Status.NominatedNodeName)
	}
}

// A pod the scheduler binds to another released node than its planned one (off-plan) leaves its
// slot free; a pending pod of the same workload planned for the node it took is moved into that
// slot at once — store and status.nominatedNodeName — instead of being turned away and re-planned
// (which could buy a node while the plan's room exists).
func TestOffPlanBindingSwapsAPodOfTheSameWorkloadIntoTheVacatedSlot(t *testing.T) {
	h := start(t, nominating())
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}
	x, y := h.pendingPod(t, "x", owner), h.pendingPod(t, "y", owner)
	h.ctrl.Plan("node-b", []*corev1.Pod{x})
	h.ctrl.Plan("node-a", []*corev1.Pod{y})
	h.setReady(t, "node-a", true)
	h.setReady(t, "node-b", true)
	eventually(t, "batch released", 20*time.Second, func() (bool, string) {
		return h.store.IsReleased("node-a") && h.store.IsReleased("node-b"), ""
	})
	// The scheduler binds x to node-a, y's planned node.
	if err := h.direct.SubResource("binding").Create(context.Background(), x,
		&corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "y moved to x's planned node", 20*time.Second, func() (bool, string) {
		h.get(t, y)
		claim, _ := h.store.ClaimOf(y.UID)
		return claim == "node-b" && y.Status.NominatedNodeName == "node-b", fmt.Sprintf("claim %q, nominated %q", claim, y.Status.NominatedNodeName)
	})
	if n := h.replans.Load(); n != 0 {
		t.Errorf("%d re-plans; the swap needs none", n)
	}
}

// The slot an off-plan binding vacates may be on a node not released yet (nodes are released as
// they turn Ready): the swapped pod counts there and is nominated to it at its release.
func TestOffPlanBindingSwapsIntoASlotOnANodeNotReleasedYet(t *testing.T) {
	h := start(t, nominating())
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	owner := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}
	x, y := h.pendingPod(t, "x", owner), h.pendingPod(t, "y", owner)
	h.ctrl.Plan("node-b", []*corev1.Pod{x})
	h.ctrl.Plan("node-a", []*corev1.Pod{y})
	h.setReady(t, "node-a", true)
	h.releasedWithPods(t, [2]string{"y", "node-a"})
	// The scheduler binds x, planned for node-b (not Ready yet), to node-a.
	if err := h.direct.SubResource("binding").Create(context.Background(), x,
		&corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "y moved to x's planned claim", 20*time.Second, func() (bool, string) {
		claim, _ := h.store.ClaimOf(y.UID)
		return claim == "node-b", fmt.Sprintf("claim %q", claim)
	})
	h.setReady(t, "node-b", true)
	h.releasedWithPods(t, [2]string{"y", "node-b"})
	if n := h.replans.Load(); n != 0 {
		t.Errorf("%d re-plans; the swap needs none", n)
	}
}
