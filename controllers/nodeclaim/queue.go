package nodeclaim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/controllers/indexes"
)

// RegistrationPriority is the lifecycle queue's priority for a claim whose instance is launched and
// whose Node is still to be registered. Its pods wait for that step alone (the release needs
// Registered), while a claim still to launch has no Node yet and a registered one only waits to be
// marked Initialized. In one FIFO queue a burst of 1,000 claims registered none until all had
// launched (make bench-scale at 5,000 pods / 1,000 nodes: Nodes up by 57 s, releases until 86 s).
const RegistrationPriority = 10

// priorityOf is the claim's place in the lifecycle queue: RegistrationPriority while it waits to
// register, the default (0) otherwise.
func priorityOf(nc *v1.NodeClaim) int {
	if nc.DeletionTimestamp.IsZero() && nc.IsTrue(v1.ConditionTypeLaunched) && !nc.IsTrue(v1.ConditionTypeRegistered) {
		return RegistrationPriority
	}
	return 0
}

// enqueue adds the claim to the queue at its priority. A plain Add keeps the handler's default
// (low for the informer's initial list, as controller-runtime's own handlers do).
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], nc *v1.NodeClaim) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if p := priorityOf(nc); ok && p != 0 {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &p}, req)
		return
	}
	q.Add(req)
}

// claimEvents enqueues a NodeClaim on each of its events, at its priority, but for an update that
// changed only what the disruption controller writes (onlyDisruptionStatusChanged).
func claimEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return claimsAtPriority(func(_ context.Context, o client.Object) []*v1.NodeClaim {
		if nc, ok := o.(*v1.NodeClaim); ok {
			return []*v1.NodeClaim{nc}
		}
		return nil
	}, onlyDisruptionStatusChanged)
}

// disruptionConditions are the claim conditions the disruption controller owns; no lifecycle step
// reads them.
var disruptionConditions = map[string]bool{
	v1.ConditionTypeDrifted: true, v1.ConditionTypeConsolidatable: true, v1.ConditionTypeEmpty: true, v1.ConditionTypeDisrupting: true,
}

// onlyDisruptionStatusChanged reports whether the update from o to n changed nothing but the
// disruption controller's conditions and lastPodEventTime (and the resource version and managed
// fields that come with any write). No lifecycle step reads those, so the update leaves the
// lifecycle's work as it was: a claim waiting on a timeout is requeued by its own reconcile. The
// disruption status step writes ~1,500 such updates in make bench-scale's 5,000-pod settle window,
// and each was a lifecycle reconcile (a claim copy and its steps) with nothing to do.
func onlyDisruptionStatusChanged(o, n client.Object) bool {
	old, ok := o.(*v1.NodeClaim)
	nc, ok2 := n.(*v1.NodeClaim)
	return ok && ok2 && cachedobjects.ClaimChangedOnlyIn(old, nc, disruptionConditions)
}

// nodeEvents enqueues, on each event of a Node, the claims with its provider ID, at their priority:
// a new Node is what a launched claim waits for to register.
func (c *Controller) nodeEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return claimsAtPriority(c.claimsForNode, nil)
}

// claimsAtPriority is the handler that enqueues, on every event of an object, the claims claimsOf
// maps it to, each at its priority; an update for which skipUpdate (when not nil) is true enqueues
// nothing.
func claimsAtPriority(claimsOf func(context.Context, client.Object) []*v1.NodeClaim, skipUpdate func(old, new client.Object) bool) handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		for _, nc := range claimsOf(ctx, o) {
			enqueue(q, nc)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if skipUpdate != nil && skipUpdate(e.ObjectOld, e.ObjectNew) {
				return
			}
			add(ctx, q, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
	}
}

// claimsForNode returns the claims with the Node's provider ID.
func (c *Controller) claimsForNode(ctx context.Context, o client.Object) []*v1.NodeClaim {
	node, ok := o.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return nil
	}
	// Read only (only their names and conditions are read): a deep copy of the claim on every Node
	// event was garbage at once.
	claims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]*v1.NodeClaim, 0, len(claims.Items))
	for i := range claims.Items {
		out = append(out, &claims.Items[i])
	}
	return out
}
