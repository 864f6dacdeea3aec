package nodepool

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
)

// tally keeps, per pool, the count and summed capacity of its claims not being deleted, from the
// claim informer's events: each event moves one claim's share, so a status reconcile reads its
// pool's sums instead of recounting every claim. The recount scanned all claims of the cache per
// reconcile, and reconciles grow with the claims launched: 13.3 of the ~300 CPU-s at 50,000 pods.
type tally struct {
	mu     sync.Mutex
	claims map[string]share // by claim name
	pools  map[string]*poolSum
}

// share is what one claim adds to its pool. capacity is the cached claim's own map, read only (a
// cached object is never written; an update brings a new one).
type share struct {
	pool     string
	capacity corev1.ResourceList
}

type poolSum struct {
	nodes     int64
	resources map[corev1.ResourceName]*resourceSum
}

// resourceSum is one resource's total and how many claims have it: a resource no claim has any more
// leaves the status, as a recount would.
type resourceSum struct {
	total  resource.Quantity
	claims int
}

func newTally() *tally { return &tally{claims: map[string]share{}, pools: map[string]*poolSum{}} }

// observe counts the claim as it now is (a created or updated claim).
func (t *tally) observe(nc *v1.NodeClaim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(nc.Name)
	pool := nc.Labels[v1.NodePoolLabelKey]
	if pool == "" || !nc.DeletionTimestamp.IsZero() {
		return
	}
	s := share{pool: pool, capacity: nc.Status.Capacity}
	t.claims[nc.Name] = s
	ps := t.pools[pool]
	if ps == nil {
		ps = &poolSum{resources: map[corev1.ResourceName]*resourceSum{}}
		t.pools[pool] = ps
	}
	ps.nodes++
	for name, q := range s.capacity {
		rs := ps.resources[name]
		if rs == nil {
			rs = &resourceSum{}
			ps.resources[name] = rs
		}
		rs.total.Add(q)
		rs.claims++
	}
}

// forget drops a deleted claim.
func (t *tally) forget(nc *v1.NodeClaim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(nc.Name)
}

func (t *tally) dropLocked(name string) {
	s, ok := t.claims[name]
	if !ok {
		return
	}
	delete(t.claims, name)
	ps := t.pools[s.pool]
	ps.nodes--
	for rn, q := range s.capacity {
		rs := ps.resources[rn]
		if rs.claims--; rs.claims == 0 {
			delete(ps.resources, rn)
			continue
		}
		rs.total.Sub(q)
	}
	if ps.nodes == 0 {
		delete(t.pools, s.pool)
	}
}

// of returns the pool's summed capacity (a new list) and claim count.
func (t *tally) of(pool string) (corev1.ResourceList, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := corev1.ResourceList{}
	ps := t.pools[pool]
	if ps == nil {
		return out, 0
	}
	for name, rs := range ps.resources {
		out[name] = rs.total.DeepCopy()
	}
	return out, ps.nodes
}
