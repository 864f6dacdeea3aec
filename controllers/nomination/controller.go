// Package nomination is the one home of Joist's pod nominations. It records which pods the solver
// planned onto which NodeClaim (state.Nominations), releases each node to the kube-scheduler as it
// turns Ready — by default its planned pods pinned (a toleration of the claim's own
// joist.dev/planned taint, written while the node boots) and the unregistered taint swapped for that
// pin taint, lifted once they bound (pin.go); with pinning off, its planned pods'
// status.nominatedNodeName written first, then its karpenter.sh/unregistered taint lifted; a batch
// with topology-spread or pod-affinity pods is
// released together once all its nodes are Ready — and handles the pods the scheduler
// turns away from their planned node (nominate once more, then plan again). It also holds the room a
// disruption command reserves for the pods it evicts, so their re-creations land where the plan put
// them. Nothing else writes a pod's nomination or pin, or lifts those taints.
//
// It runs as two loops on the leader: a reconcile loop per provisioning batch (release.go) and a
// client-go rate-limited workqueue of pods fed by the pod informer (rejection.go). The provisioner
// calls Plan, Sweep and the read-only snapshot callbacks (LiveClaim, NominationOf, Own).
package nomination

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/snapshot"
)

// Options tune nominations and release.
type Options struct {
	// BatchReleaseTimeout bounds how long the ready nodes of a provisioning batch released together
	// (one with topology-spread or pod-affinity pods) wait for its slowest node before they are
	// released to the kube-scheduler without it.
	BatchReleaseTimeout time.Duration
	// RejectionGrace is how long a pod the kube-scheduler turned away from its planned node keeps its
	// nomination before it is planned again.
	RejectionGrace time.Duration
	// NominationTTL is how long after its NodeClaim initialized a pod's nomination still counts; a
	// pod still pending then is re-planned. It is also how long a disruption command's reservation
	// outlives the last of its drained nodes.
	NominationTTL time.Duration
	// MaxConcurrentReleases bounds the batches released in parallel.
	MaxConcurrentReleases int
	// PinPlannedPods steers the pods planned onto a new node with the claim's pin taint and a
	// toleration for it (pin.go) instead of status.nominatedNodeName.
	PinPlannedPods bool
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{BatchReleaseTimeout: 30 * time.Second, RejectionGrace: 2 * time.Second, NominationTTL: 30 * time.Second, MaxConcurrentReleases: 4, PinPlannedPods: true}
}

// Controller owns nominations and release.
type Controller struct {
	kube  client.Client
	cache ctrlcache.Cache
	// live reads from the apiserver itself (the manager's APIReader, set by Register): a stall the
	// cache shows is confirmed there before the pod is planned again.
	live  client.Reader
	store *state.Nominations
	clock clock.WithTicker
	opts  Options
	// replan starts a provisioning batch (the provisioner's Trigger).
	replan func()
	// queue holds pods to act on: rejected nominees and pods that took a reservation.
	queue workqueue.TypedRateLimitingInterface[types.UID]
	// seen tracks, per batch, when its nominations were first written and not yet shown by the cache.
	seen *seenWait
	// released maps the released claims to their nodes, to tell an off-plan binding.
	released *releasedNodes
	// spread holds the planned pods whose placement counts other nodes' pods.
	spread *spreadPods
	// displaced holds the pods whose planned room another pod took, until they are planned again.
	displaced *displacedPods
	// pinQueue holds planned pods whose pin toleration is to be written (pin.go); pins remembers
	// the ones written.
	pinQueue workqueue.TypedRateLimitingInterface[types.UID]
	pins     *pinsWritten
}

// New returns the controller. replan starts a provisioning batch; it is called when a rejected
// pod's nomination expires.
func New(kube client.Client, c ctrlcache.Cache, store *state.Nominations, replan func(), clk clock.WithTicker, opts Options) *Controller {
	return &Controller{
		kube: kube, cache: c, store: store, clock: clk, opts: opts, replan: replan,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "nomination.pods", Clock: clk}),
		pinQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "nomination.pins", Clock: clk}),
		pins: newPinsWritten(),
		seen: newSeenWait(), released: newReleasedNodes(), spread: newSpreadPods(), displaced: newDisplacedPods(),
	}
}

// Plan records that the solver placed pods on claim (an in-flight or existing NodeClaim).
func (c *Controller) Plan(claim string, pods []*corev1.Pod) {
	for _, pod := range pods {
		c.planPod(claim, pod)
	}
	c.queuePins(pods)
}

// planPod records that pod should land on claim.
func (c *Controller) planPod(claim string, pod *corev1.Pod) {
	c.displaced.forget(pod.UID)
	c.spread.note(pod)
	c.store.Nominate(claim, pod.UID)
}

// Launched records the pods of a NodeClaim the provisioner just created. A pod of a workload whose
// evicted pods a disruption command reserved room for, planned onto a new node all the same, is a
// launch the command's plan did not foresee; it is counted (reservation_metrics.go).
func (c *Controller) Launched(claim string, pods []*corev1.Pod) {
	extra := false
	for _, pod := range pods {
		c.planPod(claim, pod)
		if owner := ownerOf(pod); owner != "" && c.store.HasReservationFor(owner) {
			extra = true
		}
	}
	if extra {
		countLaunches(0, 1)
	}
	c.queuePins(pods)
}

// PodsOf returns the UIDs of the pods planned onto claim and not bound yet.
func (c *Controller) PodsOf(claim string) []types.UID { return c.store.PodsOf(claim) }

// LiveClaim reports whether pods nominated to the claim still count as placed there: it is not
// initialized for longer than the nomination TTL (a pod still pending by then is re-planned), or a
// disruption command holds room on it.
func (c *Controller) LiveClaim(nc *v1.NodeClaim) bool {
	return !c.stale(nc) || c.store.IsReserved(nc.Name)
}

// stale reports whether the claim initialized longer than the nomination TTL ago.
func (c *Controller) stale(nc *v1.NodeClaim) bool {
	cond := nc.GetCondition(v1.ConditionTypeInitialized)
	return cond != nil && cond.Status == metav1.ConditionTrue && c.clock.Now().Sub(cond.LastTransitionTime.Time) > c.opts.NominationTTL
}

// NominationOf is the claim Joist nominated a pending pod to, or the claim a disruption command
// holds room on for a pod of a node it drains (snapshot.Options.Nomination).
func (c *Controller) NominationOf(pod *corev1.Pod, _ string, _ map[string]bool) (string, bool) {
	if claim, ok := c.store.ClaimOf(pod.UID); ok {
		return claim, true
	}
	return c.store.HeldClaim(pod.UID)
}

// Own reports whether Joist remembers writing the pod's nomination (snapshot.Options.OwnNomination).
func (c *Controller) Own(pod *corev1.Pod) bool {
	return c.store.Known(pod.UID) || c.displaced.has(pod.UID)
}

// Sweep brings the store up to date with the cluster before a snapshot is built from it, so the
// snapshot's callbacks only read: rejections past their grace expire; claims initialized longer
// than the nomination TTL drop their nominations (unless a reservation holds room there);
// reservations whose drained claims are gone end; pods whose planned room another pod took lose
// their nomination (dropDisplaced), so this batch plans them; a pending pod that still carries a nomination
// Joist wrote before a restart, to a live claim, counts there again; and a pending pod re-created by a
// workload a disruption command reserved room for takes its slot.
func (c *Controller) Sweep(claims []*v1.NodeClaim, pods []*corev1.Pod) {
	now := c.clock.Now()
	byName := make(map[string]*v1.NodeClaim, len(claims))
	byNode := map[string]*v1.NodeClaim{}
	var staleClaims []string
	for _, nc := range claims {
		byName[nc.Name] = nc
		if nc.Status.NodeName != "" {
			byNode[nc.Status.NodeName] = nc
		}
		if c.stale(nc) {
			staleClaims = append(staleClaims, nc.Name)
		}
	}
	c.store.Sweep(now, c.opts.RejectionGrace, staleClaims)
	// One pass over the pods serves both: a displaced pod is remembered while it is pending (not
	// bound, finished or being deleted: a finished pod is planned by no batch again), and the
	// displaced sweep counts the bound pods against each node's room.
	onNode, pending := podsByNode(pods)
	c.displaced.keepOnly(func(uid types.UID) bool { return pending[uid] != nil })
	c.dropDisplaced(claims, onNode, pending)
	c.spread.keepOnly(c.store.Known)
	for _, ended := range c.store.EndReservations(now, c.opts.NominationTTL, func(claim string) bool { return byName[claim] != nil }) {
		reservationEnded(ended)
	}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" || !snapshot.Provisionable(pod) || c.store.Known(pod.UID) || c.displaced.has(pod.UID) {
			continue
		}
		if owner := ownerOf(pod); owner != "" {
			if _, ok := c.store.TakeReservation(pod.UID, owner); ok {
				c.tookReservation(pod.UID)
				continue
			}
		}
		if c.replanPinned(pod, byName) {
			continue // pinned before a restart: the toleration remembers
		}
		if name := pod.Status.NominatedNodeName; name != "" {
			nc := byNode[name]
			if nc == nil {
				nc = byName[name]
			}
			if nc != nil && nc.DeletionTimestamp.IsZero() && c.LiveClaim(nc) {
				c.planPod(nc.Name, pod) // nominated before a restart: the pod remembers
			}
		}
	}
}

// ownerOf is the UID of the pod's controller (the workload that re-creates it), or "".
func ownerOf(pod *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.UID
	}
	return ""
}

// replanPinned records again the planned claim of a pending pod that tolerates the pin of a live
// claim (written before a restart), and reports whether it did.
func (c *Controller) replanPinned(pod *corev1.Pod, byName map[string]*v1.NodeClaim) bool {
	for _, claim := range pinnedClaims(pod) {
		if nc := byName[claim]; nc != nil && nc.DeletionTimestamp.IsZero() && c.LiveClaim(nc) {
			c.planPod(claim, pod)
			return true
		}
	}
	return false
}
