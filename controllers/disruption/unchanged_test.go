package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// A pass over a cluster that did not change since the last pass found nothing skips the snapshot
// (four lists); any object that changes brings the full evaluation back. The status writer's
// patches (Consolidatable, lastPodEventTime), sent between the passes as in the manager, change the
// claims' resource versions but nothing a decision reads: they do not bring the evaluation back
// (in `make bench-scale`'s settle window every pass at 1,000 nodes planned again because of them).
// Status writes are off the pass, so no pass here re-reads after writing (the re-read's three
// lists).
func TestIdlePassSkipsThePlanUntilSomethingChanges(t *testing.T) {
	m := newMemCache(fullCluster(3)...)
	c := New(m, m, noDrift{}, cacheSnapshot{m}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	ctx := context.Background()
	wrote := []bool{false} // per pass: whether the status writer wrote after it
	lists := func() int64 {
		m.lists.Store(0)
		if err := c.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		n := m.lists.Load()
		rv := m.rv
		if err := c.flushStatus(ctx); err != nil { // the status writer, between passes
			t.Fatal(err)
		}
		wrote[len(wrote)-1] = m.rv != rv
		wrote = append(wrote, false)
		return n
	}
	full := lists() // observes the statuses (written after it), evaluates, finds nothing, remembers
	if !wrote[0] {
		t.Fatal("the status writer wrote nothing after the first pass; the test needs the claims' statuses to change")
	}
	if skipped := lists(); skipped != full-4 {
		t.Fatalf("pass after the status writes listed %d times, want %d (the evaluated pass's %d less the snapshot's 4)", skipped, full-4, full)
	}
	m.mu.Lock()
	m.put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default", UID: "late"}, Spec: corev1.PodSpec{NodeName: "node-00000"}})
	m.mu.Unlock()
	if again := lists(); again != full {
		t.Fatalf("after a pod landed the pass listed %d times, want %d (the full evaluation)", again, full)
	}
	if skipped := lists(); skipped != full-4 {
		t.Fatalf("unchanged pass listed %d times, want %d", skipped, full-4)
	}
	// Someone else writes a claim (a label): that is not the status writer's, and counts.
	nc := &v1.NodeClaim{}
	if err := m.Get(ctx, client.ObjectKey{Name: "node-00001"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Labels["team"] = "a"
	m.mu.Lock()
	m.put(nc)
	m.mu.Unlock()
	if again := lists(); again != full {
		t.Fatalf("after a claim was relabelled the pass listed %d times, want %d (the full evaluation)", again, full)
	}
}
