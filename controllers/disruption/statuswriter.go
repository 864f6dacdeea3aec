package disruption

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/cachedobjects"
)

// statusWriter sends the status patches the pass does not read back (Consolidatable,
// lastPodEventTime) off the pass, as Karpenter keeps Consolidatable in a per-NodeClaim controller of
// its own rather than in the disruption loop. The pass observes and hands the patches over
// (enqueue); the writer sends them, up to statusPatchParallelism at once, while the pass goes on.
// In `make bench-scale`'s settle window (1,000 claims turning Consolidatable) the pass waited for
// ~1,000 such round trips, 2.3–4.2 s a pass at 1,000 nodes.
//
// A claim has at most one patch queued: a newer observation replaces the queued one (the pass
// observes the same claim again on its next pass); a claim whose patch is in flight is not observed
// again until its answer is known (statusPending then covers the cache's lag).
type statusWriter struct {
	wake  chan struct{} // wakes the writer (at most one wake waits)
	state *statusQueue
}

func newStatusWriter() *statusWriter {
	return &statusWriter{wake: make(chan struct{}, 1), state: &statusQueue{queued: map[string]statusPatch{}, inFlight: map[string]bool{}}}
}

// enqueue hands the patches over and wakes the writer; it does not wait for them.
func (w *statusWriter) enqueue(patches []statusPatch) {
	if len(patches) == 0 {
		return
	}
	w.state.add(patches)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// busy reports whether the claim has a patch queued or in flight.
func (w *statusWriter) busy(name string) bool { return w.state.busy(name) }

// runStatusWriter sends the queued patches until ctx ends (Start runs it beside the loop). A runnable has no caller to return errors to: it
// logs them (the claim is observed and patched again on a later pass).
func (c *Controller) runStatusWriter(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.status.wake:
		}
		if err := c.flushStatus(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "writing nodeclaim statuses")
		}
	}
}

// flushStatus sends every queued patch, up to statusPatchParallelism at once, and returns when
// they are answered; the errors are returned together. The writer's loop calls it; so do tests that
// call Reconcile directly, in the writer's place.
func (c *Controller) flushStatus(ctx context.Context) error {
	var errs []error
	for {
		batch := c.status.state.take()
		if len(batch) == 0 {
			return errors.Join(errs...)
		}
		errs = append(errs, c.patchStatuses(ctx, batch))
		c.status.state.done(batch)
	}
}

// statusQueue is the writer's state: the patches queued by claim, in the order they came, and the
// claims whose patches are in flight.
type statusQueue struct {
	mu       sync.Mutex
	order    []string
	queued   map[string]statusPatch
	inFlight map[string]bool
}

func (q *statusQueue) add(patches []statusPatch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range patches {
		if q.inFlight[p.name] {
			continue
		}
		if _, ok := q.queued[p.name]; !ok {
			q.order = append(q.order, p.name)
		}
		q.queued[p.name] = p
	}
}

func (q *statusQueue) busy(name string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, queued := q.queued[name]
	return queued || q.inFlight[name]
}

// take moves every queued patch in flight and returns them.
func (q *statusQueue) take() []statusPatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]statusPatch, 0, len(q.order))
	for _, name := range q.order {
		out = append(out, q.queued[name])
		q.inFlight[name] = true
		delete(q.queued, name)
	}
	q.order = q.order[:0]
	return out
}

func (q *statusQueue) done(batch []statusPatch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range batch {
		delete(q.inFlight, p.name)
	}
}

// patchStatuses writes the claims' statuses, up to statusPatchParallelism at once; every patch is
// tried, and the errors are returned together (in the patches' order).
func (c *Controller) patchStatuses(ctx context.Context, patches []statusPatch) error {
	errs := make([]error, len(patches))
	var g errgroup.Group
	g.SetLimit(statusPatchParallelism)
	for i, p := range patches {
		g.Go(func() error {
			if err := c.patchStatus(ctx, p); client.IgnoreNotFound(err) != nil {
				errs[i] = fmt.Errorf("patching nodeclaim %s status: %w", p.name, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// ownStatusOnly reports whether answer (the apiserver's answer to a status patch computed from
// pre, the cached claim) differs from pre only in what the writer writes: the Consolidatable (and
// the retired Empty) condition and lastPodEventTime, which no decision reads back (members recompute
// them from what they observe). A claim someone else wrote in between differs in more.
func ownStatusOnly(pre, answer *v1.NodeClaim) bool {
	return pre != nil && answer != nil && cachedobjects.ClaimChangedOnlyIn(pre, answer, writerConditions)
}

// writerConditions are the conditions the writer writes.
var writerConditions = map[string]bool{v1.ConditionTypeConsolidatable: true, v1.ConditionTypeEmpty: true}
