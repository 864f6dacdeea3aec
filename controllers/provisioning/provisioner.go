// Package provisioning turns pending pods into NodeClaims: it batches provisionable pods, builds the
// solver's input from the informer cache, runs the solver and creates the NodeClaims it plans.
package provisioning

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/snapshot"
)

// Options tune batching.
type Options struct {
	// BatchIdleDuration closes a batch when no new pod arrived for this long.
	BatchIdleDuration time.Duration
	// BatchMaxDuration closes a batch this long after its first pod, however busy.
	BatchMaxDuration time.Duration
	// BatchSettleDuration closes a batch of workload pods once no new pod arrived for this long and
	// every ReplicaSet, StatefulSet and Job with pods in the batch has created all the pods it wants;
	// until then the batch is held open (up to BatchMaxDuration), since more pods are on their way.
	// Batches with other pods also wait out BatchIdleDuration. Zero turns it off: idle/max only.
	BatchSettleDuration time.Duration
	// ResyncPeriod re-runs the solver for pods still pending, in case nothing else triggers it.
	ResyncPeriod time.Duration
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		BatchIdleDuration:   time.Second,
		BatchMaxDuration:    10 * time.Second,
		BatchSettleDuration: 100 * time.Millisecond,
		ResyncPeriod:        30 * time.Second,
	}
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create

// Provisioner is a manager runnable: it needs leader election, since two provisioners would launch
// twice for the same pods.
type Provisioner struct {
	kube     client.Client
	cache    ctrlcache.Cache
	cloud    cloudprovider.CloudProvider
	recorder events.EventRecorder
	clock    clock.WithTicker
	opts     Options

	batcher *batcher
	// nominations records the plans' pods per NodeClaim and answers the snapshot's questions about
	// them; it alone writes pods' nominations and releases nodes.
	nominations *nomination.Controller
	// nominatedEvents rate-limits the per-pod Nominated events (burst 10, then 5/s, as Karpenter
	// does): a 1,000-pod burst would otherwise add 1,000 writes to the apiserver just when it is
	// busiest creating, nominating and binding those pods.
	nominatedEvents flowcontrol.RateLimiter
	// launchGate keeps broken and failing pools out of solves; cacheGate waits for our own creates to
	// show in the cache; retry backs failed batches off.
	launchGate *launchGate
	cacheGate  *cacheGate
	retry      *batchRetry
}

var _ manager.LeaderElectionRunnable = (*Provisioner)(nil)

// New returns a provisioner; register it with mgr.Add.
func New(kube client.Client, c ctrlcache.Cache, cloud cloudprovider.CloudProvider, nominations *nomination.Controller, recorder events.EventRecorder, clk clock.WithTicker, opts Options) *Provisioner {
	return &Provisioner{
		kube: kube, cache: c, cloud: cloud, recorder: recorder, clock: clk, opts: opts,
		batcher:         newBatcher(clk, opts.BatchIdleDuration, opts.BatchMaxDuration),
		nominations:     nominations,
		nominatedEvents: flowcontrol.NewTokenBucketRateLimiterWithClock(5, 10, clk),
		launchGate:      newLaunchGate(clk), cacheGate: newCacheGate(clk), retry: newBatchRetry(),
	}
}

// NeedLeaderElection is true: only the leader provisions.
func (p *Provisioner) NeedLeaderElection() bool { return true }

// Start watches pods and claims and provisions batch after batch until ctx ends.
func (p *Provisioner) Start(ctx context.Context) error {
	if err := p.watch(ctx); err != nil {
		return err
	}
	if err := p.warmUp(ctx); err != nil {
		return err
	}
	logger := log.FromContext(ctx).WithName("provisioner")
	ctx = log.IntoContext(ctx, logger)
	if p.opts.BatchSettleDuration > 0 {
		p.batcher.closeWhenComplete(p.opts.BatchSettleDuration, func(ws []workload) bool {
			complete, err := p.workloadsComplete(ctx, ws)
			if err != nil {
				logger.Error(err, "checking whether workloads have created their pods")
			}
			return complete
		})
	}
	go p.resync(ctx)
	for p.batcher.Wait(ctx) {
		err := p.Provision(ctx)
		if err != nil {
			logger.Error(err, "provisioning")
		}
		p.afterBatch(ctx, err)
	}
	return nil
}

// resync starts a batch every ResyncPeriod while provisionable pods exist, in case nothing else does.
func (p *Provisioner) resync(ctx context.Context) {
	p.everyPendingPods(ctx, p.opts.ResyncPeriod, func(pods []*corev1.Pod) {
		for _, pod := range pods {
			if snapshot.Provisionable(pod) {
				p.batcher.Trigger()
				return
			}
		}
	})
}

// everyPendingPods hands the unbound pods (the cache's own: read only) to f every period. They are
// read from the store: a List's typed copy of every pending pod was 17 MB of the heap at 50,000 pods.
func (p *Provisioner) everyPendingPods(ctx context.Context, period time.Duration, f func([]*corev1.Pod)) {
	ticker := p.clock.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		pods, err := cachedobjects.Objects[corev1.Pod](ctx, p.cache, p.kube, &corev1.PodList{}, func(pod *corev1.Pod) bool { return pod.Spec.NodeName == "" })
		if err == nil {
			f(pods)
		}
	}
}

// Trigger starts a batch, as if a pod had arrived: the nomination controller calls it when a pod it
// turned away from its planned node must be planned again.
func (p *Provisioner) Trigger() { p.batcher.Trigger() }

// warmUp starts the informers a snapshot reads and waits for them to sync, so the first batch does
// not pay for listing the cluster (a few hundred milliseconds before its first NodeClaim).
func (p *Provisioner) warmUp(ctx context.Context) error {
	for _, obj := range []client.Object{
		&corev1.Node{}, &appsv1.DaemonSet{}, &appsv1.Deployment{}, &appsv1.ReplicaSet{}, &appsv1.StatefulSet{},
		&batchv1.Job{}, &policyv1alpha1.Guardrail{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}, &storagev1.StorageClass{},
		&storagev1.CSINode{},
	} {
		if _, err := p.cache.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("starting the %T informer: %w", obj, err)
		}
	}
	if !p.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("waiting for the informer caches to sync: %w", ctx.Err())
	}
	return nil
}

// watch feeds the batcher from informer events: a new provisionable pod is an arrival; a deleted
// NodeClaim or Node may leave pods without capacity, so it triggers a batch too.
func (p *Provisioner) watch(ctx context.Context) error {
	podInformer, err := p.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting pod informer: %w", err)
	}
	onPod := func(obj interface{}) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if snapshot.Provisionable(pod) {
			// A pod seen before (a rejected nominee, say) is not a new arrival; the nomination
			// controller triggers a batch when it must be planned again.
			p.batcher.Arrive(pod.UID, workloadOf(pod), snapshot.MarkedUnschedulable(pod))
			return
		}
		p.batcher.Forget(pod.UID)
	}
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onPod,
		UpdateFunc: func(_, obj interface{}) { onPod(obj) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				p.batcher.Forget(pod.UID)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	claimInformer, err := p.cache.GetInformer(ctx, &v1.NodeClaim{})
	if err != nil {
		return fmt.Errorf("getting nodeclaim informer: %w", err)
	}
	if _, err := claimInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if nc, ok := obj.(*v1.NodeClaim); ok {
				p.cacheGate.seen(nc.Name)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if nc, ok := obj.(*v1.NodeClaim); ok {
				p.cacheGate.seen(nc.Name)
				p.batcher.Trigger()
			}
		},
		UpdateFunc: func(_, obj interface{}) {
			if nc, ok := obj.(*v1.NodeClaim); ok && !nc.DeletionTimestamp.IsZero() {
				p.batcher.Trigger()
			}
		},
	}); err != nil {
		return fmt.Errorf("watching nodeclaims: %w", err)
	}
	nodePoolInformer, err := p.cache.GetInformer(ctx, &v1.NodePool{})
	if err != nil {
		return fmt.Errorf("getting nodepool informer: %w", err)
	}
	// Only spec changes matter: status updates (the counter's) must not start batches.
	if _, err := nodePoolInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { p.batcher.Trigger() },
		UpdateFunc: func(old, obj interface{}) {
			o, ok1 := old.(*v1.NodePool)
			n, ok2 := obj.(*v1.NodePool)
			if ok1 && ok2 && o.Generation != n.Generation {
				p.batcher.Trigger()
			}
		},
	}); err != nil {
		return fmt.Errorf("watching nodepools: %w", err)
	}
	return nil
}
