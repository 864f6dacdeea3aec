package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// A failed batch is retried with exponential backoff (1 s doubling to a minute), not at once: an
// error that every batch hits would otherwise cost a full snapshot, solve and round of writes ten
// times a second. A pool's launch hold ending also starts a batch, so its probe is not left to resync.
const (
	retryInitial = time.Second
	retryMax     = time.Minute
)

// batchRetry schedules the batches that retry failures; at most one wake-up is pending at a time.
type batchRetry struct {
	limiter workqueue.TypedRateLimiter[string]

	mu      sync.Mutex
	pending time.Time // when the pending wake-up fires; zero when none
}

func newBatchRetry() *batchRetry {
	return &batchRetry{limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryInitial, retryMax)}
}

// afterBatch schedules what a batch's outcome calls for: a backed-off retry after an error, and a
// batch when the earliest pool hold ends.
func (p *Provisioner) afterBatch(ctx context.Context, err error) {
	if err != nil {
		p.retry.wakeIn(ctx, p, p.retry.limiter.When("batch"))
	} else {
		p.retry.limiter.Forget("batch")
	}
	if d, ok := p.launchGate.nextRetry(); ok {
		p.retry.wakeIn(ctx, p, d)
	}
}

// wakeIn triggers a batch after d, unless an earlier wake-up is already pending.
func (r *batchRetry) wakeIn(ctx context.Context, p *Provisioner, d time.Duration) {
	at := p.clock.Now().Add(d)
	r.mu.Lock()
	if !r.pending.IsZero() && !r.pending.After(at) {
		r.mu.Unlock()
		return
	}
	r.pending = at
	r.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(d):
		}
		r.mu.Lock()
		if r.pending.Equal(at) {
			r.pending = time.Time{}
		}
		r.mu.Unlock()
		p.batcher.Trigger()
	}()
}
