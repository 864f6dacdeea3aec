package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// batcher collects pod arrivals into batches: a batch closes when no new pod has arrived for the
// idle window, or when the max window since its first arrival has passed, or — sooner — when no pod
// has arrived for the settle window and arrivalsDone says no more pods are on their way. Only pods
// not seen before count as arrivals, so the scheduler's status updates on pods already seen don't hold
// a batch open.
type batcher struct {
	clock  clock.WithTicker
	idle   time.Duration
	max    time.Duration
	settle time.Duration
	// arrivalsDone, when set, reports whether the workload controllers have created all their pods.
	arrivalsDone func() bool

	mu    sync.Mutex
	seen  map[types.UID]struct{}
	first time.Time
	last  time.Time
	kick  chan struct{}
	// opened and closedBy describe the batch Wait last closed.
	opened   time.Time
	closedBy string
}

// LastBatch says when the batch Wait last closed had its first arrival, and what closed it.
func (b *batcher) LastBatch() (opened time.Time, closedBy string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opened, b.closedBy
}

// arrivalsPoll is how often a settled batch asks whether arrivals are done.
const arrivalsPoll = 50 * time.Millisecond

func newBatcher(c clock.WithTicker, idle, max time.Duration) *batcher {
	return &batcher{clock: c, idle: idle, max: max, seen: map[types.UID]struct{}{}, kick: make(chan struct{}, 1)}
}

// closeWhenArrivalsDone makes batches close once no pod arrived for settle and done reports true.
func (b *batcher) closeWhenArrivalsDone(settle time.Duration, done func() bool) {
	b.settle, b.arrivalsDone = settle, done
}

// Arrive records a provisionable pod. It reports whether the pod is new to the batcher.
func (b *batcher) Arrive(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.seen[uid]; ok {
		return false
	}
	b.seen[uid] = struct{}{}
	b.touchLocked()
	return true
}

// Trigger starts (or extends) a batch without a new pod, e.g. when capacity went away.
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
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Forget drops pods that are no longer pending so their UIDs don't accumulate.
func (b *batcher) Forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.seen, uid)
}

// Wait blocks until a batch closes; it returns false when ctx ends.
func (b *batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.kick:
	}
	for {
		b.mu.Lock()
		now := b.clock.Now()
		idleLeft := b.last.Add(b.idle).Sub(now)
		maxLeft := b.first.Add(b.max).Sub(now)
		settleLeft := b.last.Add(b.settle).Sub(now)
		b.mu.Unlock()
		// arrivalsDone reads the cache: call it without holding the lock informer handlers need.
		settled := b.arrivalsDone != nil && settleLeft <= 0 && idleLeft > 0 && b.arrivalsDone()
		b.mu.Lock()
		if b.last.Add(b.settle).After(now) && settled {
			settled = false // a pod arrived while we looked
		}
		if idleLeft <= 0 || maxLeft <= 0 || settled {
			switch {
			case settled:
				b.closedBy = "arrivals done"
			case maxLeft <= 0:
				b.closedBy = "max duration"
			default:
				b.closedBy = "idle"
			}
			b.opened, b.first, b.last = b.first, time.Time{}, time.Time{}
			// Drain a kick that arrived while we waited: it belongs to the batch we are closing.
			select {
			case <-b.kick:
			default:
			}
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		wait := min(idleLeft, maxLeft)
		if b.arrivalsDone != nil {
			wait = min(wait, max(settleLeft, arrivalsPoll))
		}
		select {
		case <-ctx.Done():
			return false
		case <-b.clock.After(wait):
		}
	}
}
