package nomination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/controllers/nodeclaim"
	"github.com/joist-dev/joist/snapshot"
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

const (
	// conflictRetry is how soon a release whose taint patch lost a race is retried.
	conflictRetry = 100 * time.Millisecond
	// nominationsSeenTimeout bounds the wait for the cache to show the nominations written.
	nominationsSeenTimeout = 2 * time.Second
	// nominationParallelism bounds the nomination patches in flight.
	nominationParallelism = 128
	// Request namespaces telling the two kinds of release keys apart: a provisioning batch (its label
	// value) or a claim launched outside one (a disruption replacement).
	batchKey = "batch"
	claimKey = "claim"
	// pinKey names the request that lifts a claim's pin taint (pin.go).
	pinKey = "pin"
)

// Register adds the release loop and the pod queue to mgr.
func (c *Controller) Register(mgr ctrl.Manager) error {
	if c.live == nil {
		c.live = mgr.GetAPIReader()
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("nomination.release").
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{releaseKey(o.(*v1.NodeClaim))}
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.releaseKeyOfNode)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.releaseKeyOfPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReleases}).
		Complete(reconcile.Func(c.Release))
	if err != nil {
		return fmt.Errorf("registering the release loop: %w", err)
	}
	return mgr.Add(&podQueue{c: c})
}

// releaseKey is the request that releases the claim's provisioning batch.
func releaseKey(nc *v1.NodeClaim) reconcile.Request {
	if batch := nc.Labels[v1.ProvisioningBatchLabelKey]; batch != "" {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: batchKey, Name: batch}}
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: claimKey, Name: nc.Name}}
}

// releaseKeyOfNode maps a Node that still carries the unregistered taint to its claim's batch, and
// one that carries a pin taint to that pin's lift.
func (c *Controller) releaseKeyOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	node := o.(*corev1.Node)
	if claim := pinnedClaimOf(node); claim != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pinKey, Name: claim}}}
	}
	if node.Spec.ProviderID == "" || !hasTaint(node, v1.UnregisteredTaintKey) {
		return nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims.Items))
	for i := range claims.Items {
		out = append(out, releaseKey(&claims.Items[i]))
	}
	return out
}

// releaseKeyOfPod maps a pod update that shows the last nomination a release waits for to that
// release; every other pod event maps to nothing.
func (c *Controller) releaseKeyOfPod(_ context.Context, o client.Object) []reconcile.Request {
	pod := o.(*corev1.Pod)
	if pins := releaseKeysOfPin(pod); len(pins) > 0 {
		return pins // the lift reads the bind from the informer's store (anyPending); the pod queue's handler records it
	}
	if pod.Spec.NodeName == "" && c.store.WrittenSince(pod.UID, pod.ResourceVersion) {
		return nil // a copy older than our write
	}
	key, last := c.seen.resolve(pod.UID)
	if !last {
		return nil
	}
	ns, name, _ := strings.Cut(key, "/")
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// Release makes the registered nodes of one provisioning batch schedulable, each as soon as it can
// be: a node is released once it is Ready and free of the node lifecycle controller's not-ready
// taint — the pods planned for it get status.nominatedNodeName = that node, and once the informer
// cache shows those nominations the karpenter.sh/unregistered taint is lifted. Nodes that turn Ready
// together are released together. Only a batch with a pod whose placement counts pods on other
// nodes (topology spread, pod affinity or anti-affinity) waits for all its nodes, so that every
// domain exists and is schedulable before any such pod binds; its slowest node is waited for at most
// BatchReleaseTimeout.
//
// The kube-scheduler tries a pod's nominated node first and holds room there for it, so pods land
// where the solver put them rather than on whichever node turned schedulable first. (Nominating any
// earlier does not stick: the scheduler clears the field each time it tries a pod and finds no
// node, and a new node makes it try them all again.) The nominations of a node are written once
// before its release; the release does not chase the scheduler's attempts meanwhile (that waited
// for its last Unschedulable mark), it writes the ones the scheduler cleared once more right after
// lifting the taint. Nothing here polls: node and claim updates, and the pod update that shows the
// last nomination written, requeue the batch; a deadline (nominationsSeenTimeout) releases it if
// the cache never shows them. The loop's workqueue serializes a batch: one worker releases it.
func (c *Controller) Release(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace == pinKey {
		return c.liftPin(ctx, req.Name)
	}
	key := req.String()
	claims, err := c.batchClaims(ctx, req)
	if err != nil {
		return reconcile.Result{}, err
	}
	ready, waiting, oldest, err := c.releasable(ctx, claims)
	if err != nil || len(ready) == 0 {
		c.seen.done(key)
		return reconcile.Result{}, err
	}
	together := c.releasedTogether(claims)
	if left := oldest.Add(c.opts.BatchReleaseTimeout).Sub(c.clock.Now()); waiting > 0 && together && left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil // the waiting nodes' updates requeue it sooner
	}
	// About nominationParallelism pods' nominations are kept in flight: each node goes to the
	// scheduler as soon as the cache shows its own nominations, and its pods' share of the budget
	// goes to the next nodes' nominations at once — not all nodes after all nominations, nor round
	// after round. A batch released together is written whole.
	budget := nominationParallelism
	if together || c.opts.PinPlannedPods {
		budget = math.MaxInt // pinning writes no nominations to pace: every Ready node goes in one round
	}
	for {
		var written int
		inFlight := c.seen.nominatedOf(key, ready)
		if room := budget - c.podsOf(inFlight); room > 0 {
			if written, err = c.nominate(ctx, c.seen.toNominate(key, ready, c.podCount, room)); err != nil {
				return reconcile.Result{}, err
			}
		}
		// The kube-scheduler watches pods and nodes on separate streams: lifting the taints while it
		// has yet to see some nominations lets it place pods into room held for others, which strands
		// a planned pod. Our cache, fed by the same apiserver, is the nearest proof we have that the
		// nominations are out; the pod updates that show the last of them requeue the batch. Without
		// them after nominationsSeenTimeout, release anyway.
		out, unseen := c.nominationsShown(ctx, c.seen.nominatedOf(key, ready))
		waited := c.seen.sinceStart(key, c.clock.Now())
		if waited >= nominationsSeenTimeout {
			out, unseen = c.seen.nominatedOf(key, ready), nil
		}
		if together && len(unseen) > 0 {
			out = nil // all or none
		}
		if len(out) > 0 {
			if res, err := c.releaseNodes(ctx, key, out, claims, len(ready)-len(out), written); err != nil || !res.IsZero() {
				return res, err
			}
			for claim := range out {
				delete(ready, claim)
			}
		}
		switch {
		case len(unseen) > 0 && c.seen.await(key, unseen, func(uid types.UID) bool { return c.nominationSeen(ctx, uid) }):
			// Each node's last nomination shown requeues the batch to release that node.
			return reconcile.Result{RequeueAfter: nominationsSeenTimeout - waited}, nil
		case len(ready) == 0:
			c.seen.done(key)
			return reconcile.Result{}, nil
		}
	}
}

// releaseNodes lifts the unregistered taint of the nodes (by claim) whose nominations are out, and
// writes once more the nominations the scheduler cleared meanwhile.
func (c *Controller) releaseNodes(ctx context.Context, key string, nodes map[string]*corev1.Node, claims []*v1.NodeClaim, left, written int) (reconcile.Result, error) {
	c.seen.released(key, nodes, c.clock.Now())
	log.FromContext(ctx).Info("releasing nodes to the scheduler", "nodes", len(nodes), "notYet", left, "nominationsWritten", written)
	// Each node's lift stands alone: one that lost a race (its taints changed since the cache's
	// copy) is retried, the others are released all the same — cancelling them with it cost the
	// whole group a retry, their nominations' wait included.
	var (
		g    errgroup.Group
		mu   sync.Mutex
		errs []error
	)
	byName := make(map[string]*v1.NodeClaim, len(claims))
	for _, nc := range claims {
		byName[nc.Name] = nc
	}
	for claim, n := range nodes {
		g.Go(func() error {
			if err := c.liftUnregisteredTaint(ctx, byName[claim], n); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return nil
			}
			c.released.add(claim, n.Name)
			c.store.MarkReleased(claim, c.clock.Now())
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		c.seen.done(key)
		if allRaces(errs) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, err
	}
	// A pod the scheduler tried (and failed: the node was still tainted) between its nomination and
	// the release lost the nomination; write it once more now that the node takes pods. This is not
	// the renomination a rejection gets: the pod had no chance at its node yet.
	if _, err := c.nominate(ctx, nodes); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// podCount is how many pending pods are planned for the claim.
func (c *Controller) podCount(claim string) int { return len(c.store.PodsOf(claim)) }

// podsOf is how many pending pods are planned for the nodes (by claim).
func (c *Controller) podsOf(nodes map[string]*corev1.Node) int {
	n := 0
	for claim := range nodes {
		n += c.podCount(claim)
	}
	return n
}

// nominationsShown splits the nodes (by claim) into those whose pods' nominations the informer
// cache shows, and the pods (by claim) of the others whose nominations it does not show yet.
func (c *Controller) nominationsShown(ctx context.Context, nodes map[string]*corev1.Node) (map[string]*corev1.Node, map[string][]types.UID) {
	shown := map[string]*corev1.Node{}
	unseen := map[string][]types.UID{}
	for claim, node := range nodes {
		var missing []types.UID
		for _, uid := range c.store.PodsOf(claim) {
			if !c.nominationSeen(ctx, uid) {
				missing = append(missing, uid)
			}
		}
		if len(missing) == 0 {
			shown[claim] = node
		} else {
			unseen[claim] = missing
		}
	}
	return shown, unseen
}

// releasedTogether reports whether the batch's nodes must be released together: a pod planned onto
// one of them counts pods on other nodes (topology spread, pod affinity or anti-affinity), so a node
// released alone would let the first of them bind where the rest of the plan cannot follow (a spread
// of one zone, say, then skewed).
func (c *Controller) releasedTogether(claims []*v1.NodeClaim) bool {
	return slices.ContainsFunc(claims, func(nc *v1.NodeClaim) bool { return c.spread.anyOf(c.store.PodsOf(nc.Name)) })
}

// batchClaims returns the live claims the request releases: the cache's own objects, read only.
func (c *Controller) batchClaims(ctx context.Context, req reconcile.Request) ([]*v1.NodeClaim, error) {
	var claims []*v1.NodeClaim
	if req.Namespace == batchKey {
		var err error
		if claims, err = indexes.CachedClaimsOfBatch(ctx, c.cache, c.kube, req.Name); err != nil {
			return nil, err
		}
	} else {
		nc := &v1.NodeClaim{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: req.Name}, nc, client.UnsafeDisableDeepCopy); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		claims = []*v1.NodeClaim{nc}
	}
	return slices.DeleteFunc(claims, func(nc *v1.NodeClaim) bool { return !nc.DeletionTimestamp.IsZero() }), nil
}

// releasable returns the batch's registered nodes that are ready for pods but for the unregistered
// taint (by claim name), how many of its claims have no such node yet (and are not released), and
// when the oldest claim was created.
func (c *Controller) releasable(ctx context.Context, claims []*v1.NodeClaim) (map[string]*corev1.Node, int, time.Time, error) {
	ready, waiting := map[string]*corev1.Node{}, 0
	var oldest time.Time
	for _, nc := range claims {
		if oldest.IsZero() || nc.CreationTimestamp.Time.Before(oldest) {
			oldest = nc.CreationTimestamp.Time
		}
		node, err := c.nodeFor(ctx, nc)
		if err != nil {
			return nil, 0, oldest, err
		}
		switch {
		case node != nil && (!hasTaint(node, v1.UnregisteredTaintKey) || c.released.nodeOf(nc.Name) == node.Name):
			// released already (by this loop, if the cache does not show it yet: lifting the taint
			// again would fail the patch's test of the taints it replaces)
		case node == nil || !nc.IsTrue(v1.ConditionTypeRegistered) || !readyButUnregistered(node):
			waiting++
		default:
			ready[nc.Name] = node
		}
	}
	return ready, waiting, oldest, nil
}

// readyButUnregistered reports whether a node is ready for pods but for the unregistered taint.
func readyButUnregistered(node *corev1.Node) bool {
	ready := slices.ContainsFunc(node.Status.Conditions, func(cond corev1.NodeCondition) bool {
		return cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
	})
	return ready && !hasTaint(node, corev1.TaintNodeNotReady) && !hasTaint(node, corev1.TaintNodeUnreachable)
}

// nominate points the still-pending pods planned for each claim at its node, all claims' pods at
// once. It returns how many nominations it had to write.
func (c *Controller) nominate(ctx context.Context, nodes map[string]*corev1.Node) (int, error) {
	if c.opts.PinPlannedPods {
		return 0, nil // the pin taint and the pods' tolerations steer them (pin.go)
	}
	var written atomic.Int32
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(nominationParallelism)
	for claim, node := range nodes {
		for _, uid := range c.store.PodsOf(claim) {
			g.Go(func() error {
				rv, err := c.writeNomination(gctx, uid, node.Name, "")
				if rv != "" {
					written.Add(1)
				}
				return err
			})
		}
	}
	err := g.Wait()
	return int(written.Load()), err
}

// writeNomination sets the pending pod's status.nominatedNodeName to node, unless it already shows
// it or our newer write does. A non-empty resourceVersion makes the write conditional on the pod
// being unchanged since (the apiserver refuses it with a conflict otherwise). It returns the pod's
// resourceVersion after the write, or "" when it wrote nothing.
func (c *Controller) writeNomination(ctx context.Context, uid types.UID, node, resourceVersion string) (string, error) {
	pod, err := c.podByUID(ctx, uid)
	if err != nil || pod == nil || pod.Spec.NodeName != "" {
		return "", err
	}
	if pod.Status.NominatedNodeName == node || c.store.WrittenSince(pod.UID, pod.ResourceVersion) {
		return "", nil
	}
	body := fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, node)
	if resourceVersion != "" {
		body = fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"status":{"nominatedNodeName":%q}}`, resourceVersion, node)
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}} // pod is the cache's: read only
	if err := c.kube.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(body)), client.FieldOwner(snapshot.NominationFieldManager)); err != nil {
		if apierrors.IsInvalid(err) {
			return "", nil // bound since the cache's copy: the apiserver refuses a nomination then
		}
		return "", client.IgnoreNotFound(fmt.Errorf("nominating pod %s to node %s: %w", client.ObjectKeyFromObject(pod), node, err))
	}
	c.store.Written(pod.UID, target.ResourceVersion)
	return target.ResourceVersion, nil
}

// nominationSeen reports whether the cache's copy of the pod is at least as new as our nomination
// write (or the pod is bound or gone).
func (c *Controller) nominationSeen(ctx context.Context, uid types.UID) bool {
	pod, err := c.podByUID(ctx, uid)
	return err != nil || pod == nil || pod.Spec.NodeName != "" || !c.store.WrittenSince(uid, pod.ResourceVersion)
}

// liftUnregisteredTaint removes the karpenter.sh/unregistered taint with a JSON patch that first
// tests the taints it replaces. Taints are a list a patch replaces whole, and the node lifecycle
// controller edits them too; an optimistic lock on the whole Node would also fail on every status
// heartbeat. A failed test comes back as Invalid. When the lift leaves nothing else the claim's
// node waits for (startup taints, extended resources), the same patch labels the node
// karpenter.sh/initialized: one Node write instead of two, the second of which the NodeClaim
// lifecycle's workers (blocked on each round trip) would otherwise make.
func (c *Controller) liftUnregisteredTaint(ctx context.Context, nc *v1.NodeClaim, n *corev1.Node) error {
	taints := n.Spec.Taints
	if taints == nil {
		taints = []corev1.Taint{}
	}
	kept := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey })
	if c.opts.PinPlannedPods && nc != nil {
		kept = append(kept, pinTaint(nc.Name)) // held for the claim's planned pods (pin.go)
	}
	ops := []map[string]any{
		{"op": "test", "path": "/spec/taints", "value": taints},
		{"op": "replace", "path": "/spec/taints", "value": kept},
	}
	if initializedOnceReleased(nc, n, kept) {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + jsonPointerEscape(v1.NodeInitializedLabelKey), "value": "true"})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	target := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}} // n is the cache's: read only
	if err := c.kube.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("lifting the unregistered taint from node %s: %w", n.Name, err)
	}
	return nil
}

// initializedOnceReleased reports whether the node, not labeled initialized yet, is initialized
// for its claim once its taints are kept.
func initializedOnceReleased(nc *v1.NodeClaim, n *corev1.Node, kept []corev1.Taint) bool {
	// A node without labels in the cache is left to the lifecycle: adding the whole map could
	// replace labels the cache does not show yet.
	if nc == nil || n.Labels == nil || n.Labels[v1.NodeInitializedLabelKey] == "true" {
		return false
	}
	released := *n // a shallow copy: n is the cache's
	released.Spec.Taints = kept
	return nodeclaim.NotInitializedReason(nc, &released) == ""
}

// jsonPointerEscape escapes a map key for a JSON patch path (RFC 6901).
func jsonPointerEscape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// nodeFor returns the Node registered with the claim's provider ID, or nil: the cache's copy, read
// only (a batch's release reads all its nodes on every pass).
func (c *Controller) nodeFor(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	return indexes.CachedNodeForClaim(ctx, c.cache, c.kube, nc)
}

// podByUID returns the pod with the UID, or nil: the cache's copy, read only.
func (c *Controller) podByUID(ctx context.Context, uid types.UID) (*corev1.Pod, error) {
	return indexes.CachedPodByUID(ctx, c.cache, c.kube, uid)
}

// allRaces reports whether every error is a lost race on the node's taints (a conflict, or the
// JSON patch's test failing), which a retry resolves.
func allRaces(errs []error) bool {
	return !slices.ContainsFunc(errs, func(err error) bool { return !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) })
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// seenWait remembers, per release key, since when the release has been waiting for the cache to
// show its nominations, and which pods' nominations it waits for, node by node: the pod informer's
// events resolve them (releaseKeyOfPod), and the one that resolves a node's last requeues the
// release, which releases that node.
type seenWait struct {
	mu      sync.Mutex
	since   map[string]time.Time
	waiting map[types.UID]waitSlot
	// left counts, per key and claim, the pods whose nominations the cache does not show yet.
	left map[string]map[string]int
	// nominated holds, per key, the claims whose nominations this wait has written.
	nominated map[string]map[string]bool
}

func newSeenWait() *seenWait {
	return &seenWait{since: map[string]time.Time{}, waiting: map[types.UID]waitSlot{}, left: map[string]map[string]int{}, nominated: map[string]map[string]bool{}}
}

// waitSlot is the release key and the node (by claim) a pod's awaited nomination belongs to.
type waitSlot struct{ key, claim string }

// toNominate returns the nodes (by claim) whose nominations the key's wait is to write now, and
// records them as written: nodes not written yet in this wait, in name order, until about budget
// pods (pods counts a node's) — at least one node. A node's nominations are written once before its
// release, not again on every pass while the scheduler, still trying the pods, clears some of them.
func (s *seenWait) toNominate(key string, nodes map[string]*corev1.Node, pods func(claim string) int, budget int) map[string]*corev1.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	done := s.nominated[key]
	if done == nil {
		done = map[string]bool{}
		s.nominated[key] = done
	}
	out := map[string]*corev1.Node{}
	n := 0
	for _, claim := range slices.Sorted(maps.Keys(nodes)) {
		if done[claim] {
			continue
		}
		if len(out) > 0 && n >= budget {
			break
		}
		done[claim] = true
		out[claim] = nodes[claim]
		n += pods(claim)
	}
	return out
}

// nominatedOf returns the nodes (by claim) whose nominations the key's wait has written.
func (s *seenWait) nominatedOf(key string, nodes map[string]*corev1.Node) map[string]*corev1.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]*corev1.Node{}
	for claim, node := range nodes {
		if s.nominated[key][claim] {
			out[claim] = node
		}
	}
	return out
}

// released records that the nodes left the key's wait at now: the wait's deadline counts anew for
// the nodes still in it.
func (s *seenWait) released(key string, nodes map[string]*corev1.Node, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for claim := range nodes {
		delete(s.nominated[key], claim)
	}
	s.since[key] = now
}

// sinceStart returns how long the key has been waiting, starting the wait at now if it was not.
func (s *seenWait) sinceStart(key string, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.since[key]; ok {
		return now.Sub(t)
	}
	s.since[key] = now
	return 0
}

// await makes key wait for the pods' nominations (by claim) to show. It checks each pod once more
// after registering it (an event that came between the caller's look and the registration would
// otherwise be missed) and reports whether any is still awaited.
func (s *seenWait) await(key string, pods map[string][]types.UID, seen func(types.UID) bool) bool {
	s.mu.Lock()
	for claim, uids := range pods {
		for _, uid := range uids {
			if _, ok := s.waiting[uid]; !ok {
				s.waiting[uid] = waitSlot{key: key, claim: claim}
				if s.left[key] == nil {
					s.left[key] = map[string]int{}
				}
				s.left[key][claim]++
			}
		}
	}
	s.mu.Unlock()
	for _, uids := range pods {
		for _, uid := range uids {
			if seen(uid) {
				s.resolve(uid)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.left[key]) > 0
}

// resolve records that the pod's nomination shows; it returns the release key to requeue when the
// pod was the last one that key waited for on its node.
func (s *seenWait) resolve(uid types.UID) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.waiting[uid]
	if !ok {
		return "", false
	}
	delete(s.waiting, uid)
	left := s.left[slot.key]
	if left[slot.claim]--; left[slot.claim] > 0 {
		return "", false
	}
	delete(left, slot.claim)
	if len(left) == 0 {
		delete(s.left, slot.key)
	}
	return slot.key, true
}

func (s *seenWait) done(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, key)
	delete(s.nominated, key)
	if len(s.left[key]) == 0 {
		return
	}
	for uid, slot := range s.waiting {
		if slot.key == key {
			delete(s.waiting, uid)
		}
	}
	delete(s.left, key)
}
