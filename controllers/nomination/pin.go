package nomination

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/snapshot"
)

// Pinning (Options.PinPlannedPods) steers the planned pods of a new node with a taint and
// tolerations instead of nominations. A pod planned onto a NodeClaim gets a toleration for that
// claim's own pin taint (PinTaintKey=<claim>:NoSchedule) as soon as it is planned — a pod spec may
// gain tolerations at any time, and unlike status.nominatedNodeName the kube-scheduler never clears
// one. When the node turns Ready its release swaps the karpenter.sh/unregistered taint for the pin
// taint in one patch: from then on the pods tolerating it bind there at once, and no other pod can
// take their room (every other pending pod lacks the toleration), so nothing is nominated. The pin
// is lifted once the claim's planned pods have bound, or NominationTTL after the claim initialized.
//
// Why: the kube-scheduler (1.37) filters a pod's nominated node with a copy of every other pod
// nominated there added first (RunFilterPluginsWithNominatedPods → addGENominatedPods: a DeepCopy of
// each, then AddPodInfo and every PreFilter AddPod extension), so a node planned for n pods costs it
// about n²/2 pod additions while they bind (~87,000 for the benchmark's 1,000 pods on 8 nodes). A
// tolerating pod costs one filter per node, as the floor's hostname-pinned pods do.

// PinTaintKey is the key of the taint that holds a released node's room for the pods planned onto
// its NodeClaim (the taint's value is the claim's name) until they have bound.
const PinTaintKey = "joist.dev/planned"

// pinTaint is the claim's pin taint.
func pinTaint(claim string) corev1.Taint {
	return corev1.Taint{Key: PinTaintKey, Value: claim, Effect: corev1.TaintEffectNoSchedule}
}

// pinToleration tolerates the claim's pin taint only.
func pinToleration(claim string) corev1.Toleration {
	return corev1.Toleration{Key: PinTaintKey, Operator: corev1.TolerationOpEqual, Value: claim, Effect: corev1.TaintEffectNoSchedule}
}

// toleratesPin reports whether the pod tolerates the claim's pin taint.
func toleratesPin(pod *corev1.Pod, claim string) bool {
	want := pinToleration(claim)
	return slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == want.Key && tol.Operator == want.Operator && tol.Value == want.Value && (tol.Effect == "" || tol.Effect == want.Effect)
	})
}

// pinnedClaims returns the claims whose pin taint the pod tolerates (PinTaintKey, Equal).
func pinnedClaims(pod *corev1.Pod) []string {
	var out []string
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == PinTaintKey && tol.Operator == corev1.TolerationOpEqual && tol.Value != "" {
			out = append(out, tol.Value)
		}
	}
	return out
}

// pinnedClaimOf is the claim whose pin taint the node carries, or "".
func pinnedClaimOf(node *corev1.Node) string {
	for _, t := range node.Spec.Taints {
		if t.Key == PinTaintKey {
			return t.Value
		}
	}
	return ""
}

// pinsWritten remembers the tolerations written and not yet shown by the cache, so a pod planned
// twice in a row is patched once.
type pinsWritten struct {
	mu  sync.Mutex
	set map[types.UID]string
}

func newPinsWritten() *pinsWritten { return &pinsWritten{set: map[types.UID]string{}} }

func (p *pinsWritten) has(uid types.UID, claim string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set[uid] == claim
}

func (p *pinsWritten) add(uid types.UID, claim string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set[uid] = claim
}

func (p *pinsWritten) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.set, uid)
}

// queuePins queues the pods' toleration writes (pinning on only).
func (c *Controller) queuePins(pods []*corev1.Pod) {
	if !c.opts.PinPlannedPods {
		return
	}
	for _, pod := range pods {
		c.pinQueue.Add(pod.UID)
	}
}

// tookReservation queues a pod that took a disruption command's reservation: its nomination, and
// (pinning) its toleration of the destination's pin, since a replacement node is pinned too.
func (c *Controller) tookReservation(uid types.UID) {
	reservationsTaken.Inc()
	c.queue.Add(uid)
	if c.opts.PinPlannedPods {
		c.pinQueue.Add(uid)
	}
}

// processNextPin writes one queued pod's toleration; it returns false once the queue is shut down.
func (c *Controller) processNextPin(ctx context.Context) bool {
	uid, shutdown := c.pinQueue.Get()
	if shutdown {
		return false
	}
	defer c.pinQueue.Done(uid)
	switch again, err := c.writePin(ctx, uid); {
	case err != nil:
		log.FromContext(ctx).Error(err, "pinning planned pod", "pod", uid)
		c.pinQueue.AddRateLimited(uid)
	case again:
		c.pinQueue.AddRateLimited(uid)
	default:
		c.pinQueue.Forget(uid)
	}
	return true
}

// writePin adds to the pending pod the toleration of its planned claim's pin taint, unless it has
// it already or the claim's node was released without a pin (a node lifted earlier: the pod is
// planned onto its free room, which no taint holds). It reports whether to try again later (the
// pod is not in the cache yet).
func (c *Controller) writePin(ctx context.Context, uid types.UID) (bool, error) {
	claim, ok := c.store.ClaimOf(uid)
	if !ok {
		c.pins.forget(uid)
		return false, nil
	}
	pod, err := c.podByUID(ctx, uid)
	if err != nil {
		return false, err
	}
	if pod == nil {
		return true, nil // not in the cache yet (or deleted: the store forgets a deleted pod, and ClaimOf ends this)
	}
	if pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() {
		c.pins.forget(uid)
		return false, nil
	}
	if toleratesPin(pod, claim) {
		c.pins.forget(uid)
		return false, nil
	}
	if c.pins.has(uid, claim) {
		return false, nil
	}
	pinned, err := c.claimPinned(ctx, claim)
	if err != nil || !pinned {
		return false, err
	}
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": string(pod.UID)}}
	if len(pod.Spec.Tolerations) == 0 {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/tolerations", "value": []corev1.Toleration{pinToleration(claim)}})
	} else {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/tolerations/-", "value": pinToleration(claim)})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}} // pod is the cache's: read only
	if err := c.kube.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(snapshot.NominationFieldManager)); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			return false, nil // gone, replaced or bound since the cache's copy
		}
		return false, fmt.Errorf("pinning pod %s to nodeclaim %s: %w", client.ObjectKeyFromObject(pod), claim, err)
	}
	c.pins.add(uid, claim)
	return false, nil
}

// claimPinned reports whether the claim's node carries, or is to carry, the claim's pin taint: no
// claim in the cache yet, no node yet, or a node not released yet, or one whose pin is in force.
func (c *Controller) claimPinned(ctx context.Context, claim string) (bool, error) {
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: claim}, nc, client.UnsafeDisableDeepCopy); err != nil {
		// A claim the provisioner has just created is often not in the cache yet; one deleted meanwhile
		// has left the store (ClaimOf), and a toleration of its pin is harmless.
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return false, nil
	}
	node, err := c.nodeFor(ctx, nc)
	if err != nil || node == nil {
		return err == nil, err
	}
	return hasTaint(node, v1.UnregisteredTaintKey) || pinnedClaimOf(node) == claim, nil
}

// releaseKeysOfPin maps a bound pod that tolerates pin taints to the lifts of those pins.
func releaseKeysOfPin(pod *corev1.Pod) []reconcile.Request {
	if pod.Spec.NodeName == "" {
		return nil
	}
	var out []reconcile.Request
	for _, claim := range pinnedClaims(pod) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pinKey, Name: claim}})
	}
	return out
}

// liftPin removes the claim's pin taint from its node once the pods planned onto the claim have
// bound (or gone), or once the claim's nominations are stale (NominationTTL after it initialized).
func (c *Controller) liftPin(ctx context.Context, claim string) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: claim}, nc, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	node, err := c.nodeFor(ctx, nc)
	if err != nil || node == nil || pinnedClaimOf(node) != claim {
		return reconcile.Result{}, err
	}
	if c.anyPending(ctx, claim) && !c.stale(nc) {
		return reconcile.Result{RequeueAfter: c.untilStale(nc)}, nil // binds requeue it sooner
	}
	taints := node.Spec.Taints
	kept := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == PinTaintKey })
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/spec/taints", "value": taints},
		{"op": "replace", "path": "/spec/taints", "value": kept},
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	target := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}} // the cache's: read only
	if err := c.kube.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, fmt.Errorf("lifting the pin taint from node %s: %w", node.Name, err)
	}
	log.FromContext(ctx).V(1).Info("lifted pin", "nodeclaim", claim, "node", node.Name)
	return reconcile.Result{}, nil
}

// anyPending reports whether a pod planned onto the claim is still pending in the informer's store.
// The store of nominations learns of a bind from the pod queue's handler, and the pods-by-UID map
// (podByUID) from a handler of its own, either of which may run after the release loop's handler
// whose event requeued this lift; the informer's store is updated before any handler is told, so
// each pod is read there (latestPod).
func (c *Controller) anyPending(ctx context.Context, claim string) bool {
	for _, uid := range c.store.PodsOf(claim) {
		if pod, err := c.latestPod(ctx, uid); err != nil || pod != nil && pod.Spec.NodeName == "" && pod.DeletionTimestamp.IsZero() {
			return true
		}
	}
	return false
}

// latestPod is the informer store's copy of the pod with the UID (read only), or nil: it is found
// by UID in the pods-by-UID map, which may lag the store, and read by its name from the store.
func (c *Controller) latestPod(ctx context.Context, uid types.UID) (*corev1.Pod, error) {
	pod, err := c.podByUID(ctx, uid)
	if err != nil || pod == nil {
		return nil, err
	}
	latest := &corev1.Pod{}
	if err := c.kube.Get(ctx, client.ObjectKeyFromObject(pod), latest, client.UnsafeDisableDeepCopy); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if latest.UID != uid {
		return nil, nil // deleted, and a pod of the same name made since
	}
	return latest, nil
}

// untilStale is how long until the claim's nominations go stale (NominationTTL after it
// initialized; the whole TTL while it has not).
func (c *Controller) untilStale(nc *v1.NodeClaim) time.Duration {
	cond := nc.GetCondition(v1.ConditionTypeInitialized)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return c.opts.NominationTTL
	}
	if left := cond.LastTransitionTime.Add(c.opts.NominationTTL).Sub(c.clock.Now()); left > 0 {
		return left
	}
	return time.Millisecond
}
