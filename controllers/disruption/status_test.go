package disruption

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// slowStatus is memCache whose status patches take a round trip's time, counting how many are in
// flight at once.
type slowStatus struct {
	*memCache
	inFlight, most, patches atomic.Int64
}

func (s *slowStatus) Status() client.SubResourceWriter {
	return slowStatusWriter{memStatus{s.memCache}, s}
}

type slowStatusWriter struct {
	memStatus
	s *slowStatus
}

func (w slowStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	n := w.s.inFlight.Add(1)
	defer w.s.inFlight.Add(-1)
	for m := w.s.most.Load(); n > m && !w.s.most.CompareAndSwap(m, n); m = w.s.most.Load() {
	}
	w.s.patches.Add(1)
	time.Sleep(20 * time.Millisecond)
	return w.memStatus.Patch(ctx, obj, patch, opts...)
}

// The first pass over a cluster that just launched writes every claim's status (lastPodEventTime,
// Consolidatable): with a thousand claims, one round trip after the other made that pass last about
// a minute in `make bench-scale`.
func TestFirstPassPatchesStatusesConcurrently(t *testing.T) {
	const nodes = 64
	s := &slowStatus{memCache: newMemCache(fullCluster(nodes)...)}
	c := New(s, s, noDrift{}, cacheSnapshot{s.memCache}, nil, events.NewFakeRecorder(1000), clock.RealClock{}, DefaultOptions())
	if err := c.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.patches.Load(); got < nodes {
		t.Fatalf("the first pass patched %d claim statuses, want all %d", got, nodes)
	}
	if most := s.most.Load(); most < 2 || most > statusPatchParallelism {
		t.Errorf("at most %d status patches were in flight at once, want 2..%d", most, statusPatchParallelism)
	}
	var claims v1.NodeClaimList
	if err := s.List(context.Background(), &claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		if nc.Status.LastPodEventTime.IsZero() {
			t.Errorf("claim %s: lastPodEventTime not written", nc.Name)
		}
	}
}
