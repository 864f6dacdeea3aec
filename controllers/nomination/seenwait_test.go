package nomination

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The release waits for the cache to show its nominations without polling: the pod event that shows
// the last awaited nomination of a node (and only that one) names the release to requeue; a
// nomination the cache already showed when the wait began is not awaited at all.
func TestSeenWaitRequeuesOnTheLastNominationShown(t *testing.T) {
	s := newSeenWait()
	shown := map[types.UID]bool{"c": true}
	if !s.await("batch/1", map[string][]types.UID{"node-a": {"a", "b", "c"}}, func(uid types.UID) bool { return shown[uid] }) {
		t.Fatal("await reports nothing left although a and b are not shown")
	}
	if _, last := s.resolve("c"); last {
		t.Error("c was shown before the wait; it must not count again")
	}
	if key, last := s.resolve("a"); last {
		t.Errorf("a resolved the wait (%q) while b is still awaited", key)
	}
	key, last := s.resolve("b")
	if !last || key != "batch/1" {
		t.Errorf("b, the last awaited, resolved (%q, %v), want (batch/1, true)", key, last)
	}
	if _, last := s.resolve("b"); last {
		t.Error("a second event for b requeued again")
	}
	if s.await("batch/2", map[string][]types.UID{"node-d": {"d"}}, func(types.UID) bool { return true }) {
		t.Error("a nomination shown by the time it was registered is still awaited")
	}
}

// A node whose nominations all show requeues its release at once, while another node's
// nominations are still on their way: each node goes out as soon as its own pods are nominated,
// not when the slowest of the nominations in flight shows.
func TestSeenWaitRequeuesForEachNodeWhoseNominationsShow(t *testing.T) {
	s := newSeenWait()
	s.await("batch/1", map[string][]types.UID{"node-a": {"a1", "a2"}, "node-b": {"b1"}}, func(types.UID) bool { return false })
	if _, last := s.resolve("a1"); last {
		t.Error("a1 requeued the release while a2, of the same node, is not shown")
	}
	if key, last := s.resolve("a2"); !last || key != "batch/1" {
		t.Errorf("a2, node-a's last, resolved (%q, %v), want (batch/1, true) although node-b's b1 is still awaited", key, last)
	}
	if !s.await("batch/1", map[string][]types.UID{"node-b": {"b1"}}, func(types.UID) bool { return false }) {
		t.Error("node-b's b1 is no longer awaited")
	}
	if key, last := s.resolve("b1"); !last || key != "batch/1" {
		t.Errorf("b1 resolved (%q, %v), want (batch/1, true)", key, last)
	}
}

func TestSeenWaitDoneForgetsTheKeysPods(t *testing.T) {
	s := newSeenWait()
	s.await("batch/1", map[string][]types.UID{"node-a": {"a"}}, func(types.UID) bool { return false })
	s.done("batch/1")
	if _, last := s.resolve("a"); last {
		t.Error("a pod of a finished release still requeues it")
	}
}

// A node's nominations are written once per release wait, in rounds of about the budget's pods (at
// least one node): a later pass of the same wait writes only nodes not written yet, rather than
// chasing the scheduler's attempts until its last one; a new wait writes them all again.
func TestSeenWaitNominatesEachNodeOncePerWait(t *testing.T) {
	s := newSeenWait()
	pods := func(string) int { return 100 }
	a, b, c := &corev1.Node{}, &corev1.Node{}, &corev1.Node{}
	nodes := map[string]*corev1.Node{"a": a, "b": b, "c": c}
	if got := s.toNominate("batch/1", nodes, pods, 150); len(got) != 2 || got["a"] != a || got["b"] != b {
		t.Fatalf("first round nominates %v, want nodes a and b (150 pods' budget, 100 pods each, at least the budget)", got)
	}
	if got := s.toNominate("batch/1", nodes, pods, 150); len(got) != 1 || got["c"] != c {
		t.Fatalf("second round of the same wait nominates %v, want only node c (a and b were written already)", got)
	}
	if got := s.toNominate("batch/1", nodes, pods, 150); len(got) != 0 {
		t.Fatalf("third round nominates %v again", got)
	}
	if got := s.nominatedOf("batch/1", map[string]*corev1.Node{"a": a, "x": c}); len(got) != 1 || got["a"] != a {
		t.Errorf("nominatedOf = %v, want node a only", got)
	}
	if got := s.toNominate("batch/2", nodes, pods, 1000); len(got) != 3 {
		t.Errorf("another key shares the first key's record: %v", got)
	}
	s.done("batch/1")
	if got := s.toNominate("batch/1", nodes, pods, 1000); len(got) != 3 {
		t.Errorf("after the wait ended, a new one nominates %v, want all three nodes", got)
	}
}
