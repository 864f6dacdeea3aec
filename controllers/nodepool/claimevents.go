package nodepool

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
)

// claimEventsWait is how long a pool's status waits after one of its claims changed, so that the
// changes of the claims launched meanwhile are summed once. Each recount lists all the pool's claims:
// recounting on every claim event made this loop 13 % of the manager's CPU at 1,000 nodes in
// make bench-scale (quadratic in the claims while they launch). The status lags by this much.
const claimEventsWait = time.Second

// claimEvents enqueues a claim's pool, after wait, when the claim is created or deleted or changes
// what the pool's status counts (ClaimCountChanged), and moves the claim's share in t; the queue
// holds a waiting pool once, so the events of the wait coalesce into one reconcile. Pool events are
// enqueued at once (For).
func claimEvents(wait time.Duration, t *tally) handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(o client.Object, q queue) {
		if pool := o.GetLabels()[v1.NodePoolLabelKey]; pool != "" {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}}, wait)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if nc, ok := e.Object.(*v1.NodeClaim); ok {
				t.observe(nc)
			}
			enqueue(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			old, cur, ok := claims(e.ObjectOld, e.ObjectNew)
			if !ok || ClaimCountChanged(old, cur) {
				if ok {
					t.observe(cur)
				}
				enqueue(e.ObjectOld, q)
				enqueue(e.ObjectNew, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if nc, ok := e.Object.(*v1.NodeClaim); ok {
				t.forget(nc)
			}
			enqueue(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { enqueue(e.Object, q) },
	}
}

func claims(a, b client.Object) (*v1.NodeClaim, *v1.NodeClaim, bool) {
	old, ok1 := a.(*v1.NodeClaim)
	cur, ok2 := b.(*v1.NodeClaim)
	return old, cur, ok1 && ok2
}

// ClaimCountChanged reports whether a claim's update changes what its pool's status counts: the
// pool it belongs to, whether it is being deleted, its capacity. Condition and timestamp updates
// (most of a claim's events) do not.
func ClaimCountChanged(old, cur *v1.NodeClaim) bool {
	return old.Labels[v1.NodePoolLabelKey] != cur.Labels[v1.NodePoolLabelKey] ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() ||
		!equality.Semantic.DeepEqual(old.Status.Capacity, cur.Status.Capacity)
}

// InPool matches the claims of the pool.
func InPool(pool string) func(*v1.NodeClaim) bool {
	return func(nc *v1.NodeClaim) bool { return nc.Labels[v1.NodePoolLabelKey] == pool }
}
