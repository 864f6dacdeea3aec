package provisioning

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
)

// Cache gate: the solver reads NodeClaims from the informer cache, and pods nominated to a claim the
// cache does not show yet would be planned a second time (a double launch). Before each solve the
// provisioner waits until every NodeClaim it created is visible (Karpenter's cluster state Synced()).
const (
	// cacheGateWait bounds one wait; the batch is then retried.
	cacheGateWait = 10 * time.Second
	// cacheGateForget drops a claim never seen this long after its create (deleted before the cache
	// caught up, say), so one lost event cannot stop provisioning.
	cacheGateForget = time.Minute
	cacheGatePoll   = 20 * time.Millisecond
)

// cacheGate tracks the NodeClaims this process created that the cache has not shown yet.
type cacheGate struct {
	clock clock.Clock

	mu      sync.Mutex
	created map[string]time.Time
}

func newCacheGate(clk clock.Clock) *cacheGate {
	return &cacheGate{clock: clk, created: map[string]time.Time{}}
}

// created records a NodeClaim this process just created.
func (g *cacheGate) createdClaim(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.created[name] = g.clock.Now()
}

// seen records that the cache has shown (or deleted) a NodeClaim.
func (g *cacheGate) seen(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.created, name)
}

func (g *cacheGate) outstanding() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	var out []string
	for name, at := range g.created {
		if now.Sub(at) > cacheGateForget {
			delete(g.created, name)
			continue
		}
		out = append(out, name)
	}
	return out
}

// waitCaughtUp returns once cache (the reader the snapshot uses) shows every NodeClaim this process
// created, or an error after cacheGateWait.
func (g *cacheGate) waitCaughtUp(ctx context.Context, cache client.Reader) error {
	first := true
	err := wait.PollUntilContextTimeout(ctx, cacheGatePoll, cacheGateWait, true, func(ctx context.Context) (bool, error) {
		missing := g.outstanding()
		for _, name := range missing {
			if err := cache.Get(ctx, client.ObjectKey{Name: name}, &v1.NodeClaim{}); err == nil {
				g.seen(name)
			} else if !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("reading nodeclaim %s from the cache: %w", name, err)
			}
		}
		left := g.outstanding()
		if len(left) > 0 && first {
			log.FromContext(ctx).V(1).Info("waiting for the cache to show created nodeclaims", "count", len(left))
			first = false
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d created nodeclaims to show in the cache: %w", len(g.outstanding()), err)
	}
	return nil
}
