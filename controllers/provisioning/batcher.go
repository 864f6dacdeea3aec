package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// batcher collects pod arrivals into batches: a batch closes when no new pod has arrived for the
// idle window, or when the max window since its first arrival has passed. Only pods not seen before
// count as arrivals, so the scheduler's status updates on pods already seen don't hold a batch open.
type batcher struct {
	clock clock.WithTicker
	idle  time.Duration
	max   time.Duration

	mu    sync.Mutex
	seen  map[types.UID]struct{}
	first time.Time
	last  time.Time
	kick  chan struct{}
}

func newBatcher(c clock.WithTicker, idle, max time.Duration) *batcher {
	return &batcher{clock: c, idle: idle, max: max, seen: map[types.UID]struct{}{}, kick: make(chan struct{}, 1)}
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
		if idleLeft <= 0 || maxLeft <= 0 {
			b.first, b.last = time.Time{}, time.Time{}
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
		select {
		case <-ctx.Done():
			return false
		case <-b.clock.After(wait):
		}
	}
}
