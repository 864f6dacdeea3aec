package nomination

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/snapshot"
)

// podWorkers is how many pods of the queue are handled at once.
const podWorkers = 2

// podQueue watches pods and claims and keeps the store in step with them (binds, deletions), finds
// the nominated pods the kube-scheduler turned away or left waiting, and works through them on a
// rate-limited queue: nominate once more, else wait out RejectionGrace and plan again.
type podQueue struct{ c *Controller }

var _ manager.LeaderElectionRunnable = (*podQueue)(nil)

// NeedLeaderElection is true: nominations are the leader's.
func (q *podQueue) NeedLeaderElection() bool { return true }

// Start runs until ctx ends.
func (q *podQueue) Start(ctx context.Context) error {
	c := q.c
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("nomination"))
	if err := c.watch(ctx); err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for range podWorkers {
		go func() {
			for c.processNext(ctx) {
			}
		}()
	}
	go func() {
		<-ctx.Done()
		c.pinQueue.ShutDown()
	}()
	// As many toleration writes in flight as nomination writes at a release: the apiserver, not
	// the queue, sets their pace.
	for range nominationParallelism {
		go func() {
			for c.processNextPin(ctx) {
			}
		}()
	}
	c.watchStalls(ctx)
	return nil
}

// watch feeds the store and the queue from the pod and claim informers.
func (c *Controller) watch(ctx context.Context) error {
	pods, err := c.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting pod informer: %w", err)
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onPod(ctx, obj) },
		UpdateFunc: func(_, obj any) { c.onPod(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				c.store.ForgetPod(pod.UID)
				c.pins.forget(pod.UID)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	claims, err := c.cache.GetInformer(ctx, &v1.NodeClaim{})
	if err != nil {
		return fmt.Errorf("getting nodeclaim informer: %w", err)
	}
	forget := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if nc, ok := obj.(*v1.NodeClaim); ok && !nc.DeletionTimestamp.IsZero() {
			c.store.ForgetClaim(nc.Name)
		}
	}
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { forget(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if nc, ok := obj.(*v1.NodeClaim); ok {
				c.store.ForgetClaim(nc.Name)
				c.released.forget(nc.Name)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching nodeclaims: %w", err)
	}
	return nil
}

// onPod keeps the store in step with a pod (a shared cache copy: read only).
func (c *Controller) onPod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	switch {
	case pod.Spec.NodeName != "":
		c.recordBind(ctx, pod)
	case !pod.DeletionTimestamp.IsZero():
		c.store.ForgetPod(pod.UID)
	case !snapshot.Provisionable(pod):
	case c.store.IsRejection(pod.UID, pod.Status.NominatedNodeName, pod.ResourceVersion, snapshot.MarkedUnschedulable(pod)):
		// Its planned node did not take it. Give the scheduler RejectionGrace to place it there
		// after all (spread constraints loosen as other pods land), then plan again.
		if c.store.MarkRejected(pod.UID, c.clock.Now()) {
			c.rejected(ctx, pod, "kube-scheduler turned a pod away from its planned node")
		}
	default:
		if owner := ownerOf(pod); owner != "" && !c.store.Known(pod.UID) {
			if _, ok := c.store.TakeReservation(pod.UID, owner); ok {
				c.tookReservation(pod.UID)
			}
		}
	}
}

// recordBind keeps the store in step with a bound pod: an off-plan binding swaps a pod of its
// workload into its slot, and its nomination is dropped (the pod queue's handler; a pin's lift reads
// the bind from the informer's store instead, whichever handler runs first).
func (c *Controller) recordBind(ctx context.Context, pod *corev1.Pod) {
	c.swapOffPlan(ctx, pod)
	c.store.Bound(pod.UID, c.clock.Now())
}

func (c *Controller) rejected(ctx context.Context, pod *corev1.Pod, what string) {
	claim, _ := c.store.ClaimOf(pod.UID)
	log.FromContext(ctx).V(1).Info(what, "pod", klog.KObj(pod), "nodeclaim", claim, "message", snapshot.ScheduledMessage(pod))
	c.queue.Add(pod.UID)
}

// watchStalls looks, every RejectionGrace, for pods planned onto released nodes that the
// kube-scheduler has left pending without a word, and handles them as rejected.
func (c *Controller) watchStalls(ctx context.Context) {
	ticker := c.clock.NewTicker(c.opts.RejectionGrace)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		// The store's own pods, not a typed list: a copy of every pending pod every RejectionGrace was
		// 17 MB of the heap at the peak of make bench-scale at 50,000 pods.
		pods, err := cachedobjects.Objects[corev1.Pod](ctx, c.cache, c.kube, &corev1.PodList{}, unbound)
		if err != nil {
			continue
		}
		now := c.clock.Now()
		var stalled []*corev1.Pod
		for _, pod := range pods {
			if snapshot.Provisionable(pod) && c.store.IsStalled(pod.UID, now, c.opts.RejectionGrace) {
				stalled = append(stalled, pod)
			}
		}
		c.confirmStalls(ctx, stalled, now)
	}
}

// stallChecks bounds the apiserver reads in flight that confirm stalls.
const stallChecks = 16

// confirmStalls handles as rejected the stalled pods the apiserver still shows pending. A pod the
// cache shows pending may be bound already: under load the informer lagged the apiserver by over
// 10 s in make bench-scale, and when no bind shows for RejectionGrace every pod of the nodes
// released last looks left pending; re-planned, they would buy nodes a second time (the suspected
// cause of 1,174 claims for a plan of 1,000 in session 10). A pod found bound counts as bound at once (its bind event comes later and finds nothing
// to do). A pod whose read fails is looked at again on the next tick.
func (c *Controller) confirmStalls(ctx context.Context, pods []*corev1.Pod, now time.Time) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stallChecks)
	for _, pod := range pods {
		g.Go(func() error {
			live, err := c.livePod(gctx, pod)
			switch {
			case err != nil:
			case live == nil:
				c.store.ForgetPod(pod.UID)
			case live.Spec.NodeName != "":
				c.swapOffPlan(gctx, live)
				c.store.Bound(pod.UID, c.clock.Now())
			case c.store.MarkRejected(pod.UID, now):
				c.rejected(gctx, live, "kube-scheduler left a planned pod pending")
			}
			return nil
		})
	}
	_ = g.Wait()
}

// livePod reads the pod from the apiserver (from the cache when no live reader is set): nil when it
// is gone or was replaced by another pod of the same name.
func (c *Controller) livePod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if c.live == nil {
		return pod, nil
	}
	live := &corev1.Pod{}
	if err := c.live.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading pod %s: %w", client.ObjectKeyFromObject(pod), err)
	}
	if live.UID != pod.UID {
		return nil, nil
	}
	return live, nil
}

func unbound(pod *corev1.Pod) bool { return pod.Spec.NodeName == "" }

// processNext handles one pod of the queue; it returns false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	uid, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(uid)
	if err := c.handle(ctx, uid); err != nil {
		log.FromContext(ctx).Error(err, "handling nominated pod", "pod", uid)
		c.queue.AddRateLimited(uid)
		return true
	}
	c.queue.Forget(uid)
	return true
}

// handle acts on a nominated pod. One the scheduler turned away that lost its nomination gets it
// written once more (the scheduler clears it on any failed attempt, and the attempt may have come
// just before the node was released; a pod left without its nomination can take the room held for
// another such pod and strand it); one still nominated, rejected again, or whose write failed, waits
// for its rejection to expire and is then planned again. A pod that took a reservation is nominated
// to its claim's node.
func (c *Controller) handle(ctx context.Context, uid types.UID) error {
	claim, ok := c.store.ClaimOf(uid)
	if !ok {
		return nil // bound, gone or expired meanwhile
	}
	pod, err := c.podByUID(ctx, uid)
	if err != nil || pod == nil || pod.Spec.NodeName != "" {
		return err
	}
	left, rejected := c.store.ExpiresIn(uid, c.clock.Now(), c.opts.RejectionGrace)
	if !rejected {
		if !c.store.IsReleased(claim) {
			return nil // written at release
		}
		node, err := c.nodeOfClaim(ctx, claim)
		if err != nil || node == "" {
			return err
		}
		_, err = c.writeNomination(ctx, uid, node, "")
		return err
	}
	if pod.Status.NominatedNodeName == "" && c.store.StartRenomination(uid) {
		node, err := c.nodeOfClaim(ctx, claim)
		if err == nil && node != "" {
			if rv, err := c.writeNomination(ctx, uid, node, pod.ResourceVersion); err == nil && rv != "" {
				c.store.Renominated(uid, rv)
				return nil
			}
		}
	}
	if left > 0 {
		c.queue.AddAfter(uid, left)
		return nil
	}
	c.replan()
	return nil
}

// nodeOfClaim is the name of the claim's node, or "".
func (c *Controller) nodeOfClaim(ctx context.Context, claim string) (string, error) {
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: claim}, nc); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return nc.Status.NodeName, nil
}
