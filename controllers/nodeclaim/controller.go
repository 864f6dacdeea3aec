// Package nodeclaim runs a NodeClaim's lifecycle: launch the instance, register its Node, wait for it
// to initialize, time out claims that never do, and on deletion remove the Node and the instance.
package nodeclaim

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/cachedobjects"
)

// Options tune the lifecycle.
type Options struct {
	// LaunchTimeout deletes a claim whose instance could not be launched within it.
	LaunchTimeout time.Duration
	// RegistrationTimeout deletes a launched claim whose Node did not register within it.
	RegistrationTimeout time.Duration
	// MaxConcurrentReconciles bounds parallel launches.
	MaxConcurrentReconciles int
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{LaunchTimeout: 5 * time.Minute, RegistrationTimeout: 15 * time.Minute, MaxConcurrentReconciles: 10}
}

// Controller reconciles NodeClaims.
type Controller struct {
	kube client.Client
	// live reads from the apiserver itself (the manager's APIReader, set by Register): the Node a
	// launch just created, which the cache does not show yet.
	live client.Reader
	// informers are the manager's cache (set by Register; nil: read through kube): the claim's Node
	// is read from the store, without a copy.
	informers   ctrlcache.Informers
	cloud       cloudprovider.CloudProvider
	unavailable *cloudprovider.UnavailableOfferings // may be nil: the provider keeps its own
	recorder    events.EventRecorder
	clock       clock.PassiveClock
	opts        Options
	// launched remembers each claim's launch result for launchMemory, by UID: a reconcile that reads
	// the claim from a cache that has not yet seen its Launched status must not call the cloud again.
	launched *cache.Expiring
	// launchedEvents rate-limits the Launched events (burst 10, then 5/s, as the provisioner's
	// Nominated events): one per claim was 1,000 event writes per 1,000 launches in make bench-scale,
	// and the claim's Launched condition says the same.
	launchedEvents flowcontrol.PassiveRateLimiter
}

// New returns the lifecycle controller. unavailable is the cache the provider reads offerings'
// availability from; the launch path marks the offerings of an InsufficientCapacityError in it.
func New(kube client.Client, cloud cloudprovider.CloudProvider, unavailable *cloudprovider.UnavailableOfferings, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Controller {
	return &Controller{kube: kube, live: kube, cloud: cloud, unavailable: unavailable, recorder: recorder, clock: clk, opts: opts,
		launched: cache.NewExpiring(), launchedEvents: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(5, 10, clk)}
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/finalizers,verbs=update
// Creating Nodes is the KWOK provider's alone (it writes the simulated Node); its ClusterRole is in
// config/components/kwok, so installs on a real cloud never grant nodes/create.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile moves one claim along its lifecycle: one spec/metadata patch and one status patch at the end.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The claim as read is the store's own object (read only: persist diffs against it), and the
	// steps change one copy of it: a cached Get's deep copy and a second copy to diff against were
	// two claim copies per reconcile, most of them of claims with nothing to do.
	stored, err := cachedobjects.Get[v1.NodeClaim](ctx, c.informers, c.kube, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nc := stored.DeepCopy()
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
	}
	var result reconcile.Result
	var stepErr error
	for _, step := range []func(context.Context, *v1.NodeClaim) (reconcile.Result, error){c.launch, c.register, c.initialize, c.liveness} {
		r, err := step(ctx, nc)
		if err != nil {
			stepErr = err
			break
		}
		if r.RequeueAfter > 0 && (result.RequeueAfter == 0 || r.RequeueAfter < result.RequeueAfter) {
			result = r
		}
		if !nc.DeletionTimestamp.IsZero() {
			break
		}
	}
	if err := c.persist(ctx, stored, nc); err != nil {
		return reconcile.Result{}, err
	}
	return result, stepErr
}

// persist writes metadata and status changes, one patch each, computed against what was read. The
// two patches touch disjoint parts of the claim and carry no resource version, so they are sent
// together: a launch writes both (the instance's labels, then Launched and Registered), and one
// after the other they were two of the four round trips that bound each lifecycle worker's launch
// rate. Should the metadata patch fail where the status patch did not, the next reconcile writes
// the launch's labels again from the launch it remembers (launch).
func (c *Controller) persist(ctx context.Context, stored, nc *v1.NodeClaim) error {
	var g errgroup.Group
	if !equality.Semantic.DeepEqual(stored.ObjectMeta, nc.ObjectMeta) {
		g.Go(func() error {
			if err := c.kube.Patch(ctx, nc.DeepCopy(), client.MergeFrom(stored)); err != nil {
				return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s: %w", nc.Name, err))
			}
			return nil
		})
	}
	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		data, err := statusPatch(&stored.Status, &nc.Status)
		if err != nil {
			return fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err)
		}
		g.Go(func() error {
			// Nothing reads the answer: it is asked for as metadata only (the metadata client's
			// PartialObjectMetadata), not the whole claim decoded from JSON.
			answer := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Namespace: nc.Namespace}}
			answer.SetGroupVersionKind(v1.GroupVersion.WithKind("NodeClaim"))
			if err := c.kube.Status().Patch(ctx, answer, client.RawPatch(types.MergePatchType, data)); err != nil {
				return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err))
			}
			return nil
		})
	}
	return g.Wait()
}

// Register sets the controller up with the manager. The queue is controller-runtime's priority
// queue: claims waiting to register go ahead of launches (queue.go).
func (c *Controller) Register(mgr ctrl.Manager) error {
	c.live, c.informers = mgr.GetAPIReader(), mgr.GetCache()
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodeclaim.lifecycle").
		Watches(&v1.NodeClaim{}, claimEvents()).
		Watches(&corev1.Node{}, c.nodeEvents()).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles, UsePriorityQueue: ptr.To(true)}).
		Complete(c)
}
