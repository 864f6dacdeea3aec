package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// A pass over a cluster that did not change since the last pass found nothing skips the snapshot
// (four lists) and, having written nothing, the re-read before deciding (three); any object that
// changes brings the full evaluation back.
func TestIdlePassSkipsThePlanUntilSomethingChanges(t *testing.T) {
	m := newMemCache(fullCluster(3)...)
	c := New(m, m, noDrift{}, cacheSnapshot{m}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	ctx := context.Background()
	lists := func() int64 {
		m.lists.Store(0)
		if err := c.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		return m.lists.Load()
	}
	full := lists() // writes what it observed, evaluates, finds nothing, remembers
	if skipped := lists(); skipped != full-4-3 {
		t.Fatalf("unchanged pass listed %d times, want %d (the evaluated pass's %d less the snapshot's 4 and the re-read's 3)", skipped, full-7, full)
	}
	m.mu.Lock()
	m.put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default", UID: "late"}, Spec: corev1.PodSpec{NodeName: "node-00000"}})
	m.mu.Unlock()
	// The pass evaluates again (the snapshot's lists); it writes nothing — the pod's lastPodEventTime
	// waits for a condition change or lastPodEventDedupe — so it does not re-read.
	if again := lists(); again != full-3 {
		t.Fatalf("after a pod landed the pass listed %d times, want %d (the full evaluation, no re-read)", again, full-3)
	}
}
