package nomination

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/state"
)

// nominating is the default options with pinning off: the tests of the nomination path.
func nominating() Options {
	opts := DefaultOptions()
	opts.PinPlannedPods = false
	return opts
}

func hasPin(n *corev1.Node, claim string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(ptrTo(pinTaint(claim))) && t.Value == claim })
}

func ptrTo[T any](v T) *T { return &v }

// Pinning (the default): each planned pod gets a toleration of its claim's pin taint while its node
// is still coming up, a Ready node trades the unregistered taint for its own pin taint in one
// release, no pod is nominated, and the pin is lifted once the node's planned pod has bound.
func TestPinnedReleaseWritesTolerationsNotNominations(t *testing.T) {
	opts := DefaultOptions()
	if !opts.PinPlannedPods {
		t.Fatal("pinning is off by default; the default bench-e2e run measures it on")
	}
	h := start(t, opts)
	h.claimWithNode(t, "node-a", "batch-1", false)
	h.claimWithNode(t, "node-b", "batch-1", false)
	podA, podB := h.pendingPod(t, "pod-a", nil), h.pendingPod(t, "pod-b", nil)
	h.ctrl.Launched("node-a", []*corev1.Pod{podA})
	h.ctrl.Launched("node-b", []*corev1.Pod{podB})

	// Both pods are pinned before either node is Ready: the toleration does not wait for a release.
	eventually(t, "tolerations written before any release", 20*time.Second, func() (bool, string) {
		h.get(t, podA)
		h.get(t, podB)
		return toleratesPin(podA, "node-a") && toleratesPin(podB, "node-b"), fmt.Sprintf("pod-a %v, pod-b %v", podA.Spec.Tolerations, podB.Spec.Tolerations)
	})
	if toleratesPin(podA, "node-b") || toleratesPin(podB, "node-a") {
		t.Fatalf("a pod tolerates another claim's pin: pod-a %v, pod-b %v", podA.Spec.Tolerations, podB.Spec.Tolerations)
	}

	h.setReady(t, "node-a", true)
	nodeA := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	eventually(t, "node-a released with its pin", 20*time.Second, func() (bool, string) {
		h.get(t, nodeA)
		return !tainted(nodeA) && hasPin(nodeA, "node-a"), fmt.Sprintf("taints %v", nodeA.Spec.Taints)
	})
	h.get(t, podA)
	if podA.Status.NominatedNodeName != "" {
		t.Errorf("pod-a nominated to %q; a pinned pod needs no nomination", podA.Status.NominatedNodeName)
	}
	if !h.store.IsReleased("node-a") {
		t.Error("node-a released but not marked released: its pods' stalls would go unseen")
	}
	nodeB := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	h.get(t, nodeB)
	if !tainted(nodeB) || hasPin(nodeB, "node-b") {
		t.Fatalf("node-b released before it was Ready: taints %v", nodeB.Spec.Taints)
	}

	// The scheduler binds pod-a to node-a: nothing is held there any more.
	if err := h.direct.SubResource("binding").Create(context.Background(), podA,
		&corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node-a's pin lifted once its pod bound", 20*time.Second, func() (bool, string) {
		h.get(t, nodeA)
		return len(nodeA.Spec.Taints) == 0, fmt.Sprintf("taints %v", nodeA.Spec.Taints)
	})
	h.get(t, nodeA)
	if nodeA.Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Errorf("node-a not labeled initialized by its release (labels %v): the pin is not a startup taint", nodeA.Labels)
	}
	h.get(t, podB)
	if podB.Status.NominatedNodeName != "" {
		t.Errorf("pod-b nominated to %q", podB.Status.NominatedNodeName)
	}
}

// A pod whose planned node was released and pinned keeps its claim across a restart: the sweep
// finds it by its toleration (pinned pods carry no nomination to remember them by).
func TestSweepRemembersAPinnedPodAfterARestart(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	store := state.NewNominations()
	c := New(nil, nil, store, func() {}, clk, DefaultOptions())
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p-uid"},
		Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{pinToleration("node-a")}}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default", UID: "q-uid"},
		Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{pinToleration("gone")}}}
	c.Sweep([]*v1.NodeClaim{claim}, []*corev1.Pod{pod, other})
	if got, ok := store.ClaimOf(pod.UID); !ok || got != "node-a" {
		t.Errorf("pinned pod counts on %q (%v), want node-a", got, ok)
	}
	if got, ok := store.ClaimOf(other.UID); ok {
		t.Errorf("a pod pinned to a claim that is gone counts on %q", got)
	}
}
