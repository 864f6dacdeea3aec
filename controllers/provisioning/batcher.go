package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// workload is the controller (ReplicaSet, StatefulSet, Job) that created an arriving pod.
type workload struct {
	Kind, Namespace, Name string
	UID                   types.UID
}

// batcher collects pod arrivals into batches. Without a completeness check, a batch closes when no
// new pod has arrived for the idle window. With one (closeWhenComplete), a batch closes as soon as
// the kube-scheduler has seen every pod of the batch (marked it PodScheduled=False/Unschedulable, or
// bound it), no pod has arrived for the settle window, and every workload whose pods are in the
// batch has created all the pods it wants: arrivals have stopped and the scheduler has found no room
// for any of them, so there is nothing to wait for. A pod the scheduler has not tried yet holds the
// batch (it may yet fit on an existing node) up to the idle window after the last arrival; past it
// the batch still waits for its workloads to be complete. A batch
// holding pods of no known workload (bare pods, custom controllers) also waits out the idle window.
// The max window since the first arrival bounds every batch: Karpenter's idle and max durations
// stay the upper bounds. Only pods not seen before count as arrivals, so the scheduler's status
// updates on pods already seen don't hold a batch open.
type batcher struct {
	clock  clock.WithTicker
	idle   time.Duration
	max    time.Duration
	settle time.Duration
	// complete reports whether the workloads have created all the pods they want.
	complete func([]workload) bool

	mu        sync.Mutex
	seen      map[types.UID]struct{}
	first     time.Time
	last      time.Time
	workloads map[types.UID]workload
	unowned   bool
	// untried holds the batch's pods the kube-scheduler has not marked unschedulable yet.
	untried map[types.UID]struct{}
	kick    chan struct{}
	// opened and closedBy describe the batch Wait last closed.
	opened   time.Time
	closedBy string
}

// completePoll is how often a settled batch asks whether its workloads are complete.
const completePoll = 50 * time.Millisecond

func newBatcher(c clock.WithTicker, idle, max time.Duration) *batcher {
	return &batcher{clock: c, idle: idle, max: max, seen: map[types.UID]struct{}{},
		workloads: map[types.UID]workload{}, untried: map[types.UID]struct{}{}, kick: make(chan struct{}, 1)}
}

// closeWhenComplete makes batches close once no pod arrived for settle and complete reports that
// the batch's workloads have created all their pods.
func (b *batcher) closeWhenComplete(settle time.Duration, complete func([]workload) bool) {
	b.settle, b.complete = settle, complete
}

// LastBatch says when the batch Wait last closed had its first arrival, and what closed it.
func (b *batcher) LastBatch() (opened time.Time, closedBy string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opened, b.closedBy
}

// Arrive records a provisionable pod created by w (nil: no workload the batcher can check), and
// whether the kube-scheduler has marked it unschedulable (tried). It reports whether the pod is new
// to the batcher; a pod seen before is no arrival, but its being tried counts.
func (b *batcher) Arrive(uid types.UID, w *workload, tried bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[uid]; ok {
		if _, waiting := b.untried[uid]; waiting && tried {
			delete(b.untried, uid)
			b.kickLocked() // that may have been the last one the batch waited for
		}
		return false
	}
	b.seen[uid] = struct{}{}
	if !tried {
		b.untried[uid] = struct{}{}
	}
	if w != nil {
		b.workloads[w.UID] = *w
	} else {
		b.unowned = true
	}
	b.touchLocked()
	return true
}

// Trigger starts (or extends) a batch without a new pod, e.g. when capacity went away. It brings no
// arrivals to wait for: a batch of triggers alone closes after the settle window.
func (b *batcher) Trigger() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.touchLocked()
}

func (b *batcher) touchLocked() {
	now := b.clock.Now()
	if b.first.IsZero() {
		b.first = now
	}
	b.last = now
	b.kickLocked()
}

func (b *batcher) kickLocked() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Forget drops pods that are no longer pending (bound, deleted) so their UIDs don't accumulate; a
// batch does not wait for the scheduler to try them.
func (b *batcher) Forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.seen, uid)
	if _, waiting := b.untried[uid]; waiting {
		delete(b.untried, uid)
		b.kickLocked()
	}
}

// Wait blocks until a batch closes; it returns false when ctx ends.
func (b *batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.kick:
	}
	for {
		closedBy, wait := b.check()
		if closedBy != "" {
			return true
		}
		timer := b.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C():
		case <-b.kick: // an arrival, or a pod tried: look again now
			timer.Stop()
		}
	}
}

// check closes the open batch if it is due, saying why; otherwise it says how long to wait before
// looking again.
func (b *batcher) check() (closedBy string, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	idleLeft := b.last.Add(b.idle).Sub(now)
	maxLeft := b.first.Add(b.max).Sub(now)
	switch {
	case maxLeft <= 0:
		return b.closeLocked("max duration"), 0
	case b.complete == nil:
		if idleLeft <= 0 {
			return b.closeLocked("idle"), 0
		}
		return "", min(idleLeft, maxLeft)
	}
	if settleLeft := b.last.Add(b.settle).Sub(now); settleLeft > 0 {
		return "", min(settleLeft, maxLeft)
	}
	// A pod the scheduler has not tried yet holds the batch up to the idle window (a pod tried kicks
	// Wait sooner); past it, a scheduler slow to try them holds it no longer, but a workload still
	// creating pods does: closing then split a burst the loaded scheduler lagged behind into
	// batches that each bought their own nodes.
	untried := len(b.untried) > 0
	if untried && idleLeft > 0 {
		return "", min(idleLeft, maxLeft)
	}
	workloads := make([]workload, 0, len(b.workloads))
	for _, w := range b.workloads {
		workloads = append(workloads, w)
	}
	last := b.last
	// complete reads the cache: call it without the lock that informer handlers need.
	b.mu.Unlock()
	complete := b.complete(workloads)
	b.mu.Lock()
	switch {
	case !b.last.Equal(last):
		return "", min(b.settle, maxLeft) // a pod arrived while we looked
	case !complete:
		return "", min(completePoll, maxLeft) // pods are on their way: hold until they are here
	case !b.unowned && untried:
		return b.closeLocked("idle, workloads complete"), 0
	case !b.unowned:
		return b.closeLocked("scheduler tried all, workloads complete"), 0
	case idleLeft <= 0:
		return b.closeLocked("idle"), 0
	}
	return "", min(idleLeft, maxLeft)
}

func (b *batcher) closeLocked(by string) string {
	b.opened, b.closedBy = b.first, by
	b.first, b.last = time.Time{}, time.Time{}
	b.workloads, b.unowned = map[types.UID]workload{}, false
	b.untried = map[types.UID]struct{}{}
	// Drain a kick that arrived while we waited: it belongs to the batch we are closing.
	select {
	case <-b.kick:
	default:
	}
	return by
}
