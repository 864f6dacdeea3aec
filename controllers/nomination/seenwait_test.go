package nomination

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The release waits for the cache to show its nominations without polling: the pod event that shows
// the last awaited nomination (and only that one) names the release to requeue; a nomination the
// cache already showed when the wait began is not awaited at all.
func TestSeenWaitRequeuesOnTheLastNominationShown(t *testing.T) {
	s := newSeenWait()
	shown := map[types.UID]bool{"c": true}
	if !s.await("batch/1", []types.UID{"a", "b", "c"}, func(uid types.UID) bool { return shown[uid] }) {
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
	if s.await("batch/2", []types.UID{"d"}, func(types.UID) bool { return true }) {
		t.Error("a nomination shown by the time it was registered is still awaited")
	}
}

func TestSeenWaitDoneForgetsTheKeysPods(t *testing.T) {
	s := newSeenWait()
	s.await("batch/1", []types.UID{"a"}, func(types.UID) bool { return false })
	s.done("batch/1")
	if _, last := s.resolve("a"); last {
		t.Error("a pod of a finished release still requeues it")
	}
}

// A node's nominations are written once per release wait: a later pass of the same wait (the
// scheduler, still trying the pods, cleared some meanwhile) writes only the nodes that joined it,
// rather than chasing the scheduler's attempts until its last one; a new wait writes them all again.
func TestSeenWaitNominatesEachNodeOncePerWait(t *testing.T) {
	s := newSeenWait()
	a, b := &corev1.Node{}, &corev1.Node{}
	if got := s.toNominate("batch/1", map[string]*corev1.Node{"a": a}); len(got) != 1 || got["a"] != a {
		t.Fatalf("first pass nominates %v, want node a", got)
	}
	got := s.toNominate("batch/1", map[string]*corev1.Node{"a": a, "b": b})
	if len(got) != 1 || got["b"] != b {
		t.Fatalf("second pass of the same wait nominates %v, want only node b (a was written already)", got)
	}
	if got := s.toNominate("batch/2", map[string]*corev1.Node{"a": a}); len(got) != 1 {
		t.Errorf("another key shares the first key's record: %v", got)
	}
	s.done("batch/1")
	if got := s.toNominate("batch/1", map[string]*corev1.Node{"a": a, "b": b}); len(got) != 2 {
		t.Errorf("after the wait ended, a new one nominates %v, want both nodes", got)
	}
}
