// Package termination drains a Joist Node that is being deleted: taint it, evict its pods through
// the Eviction API (so PodDisruptionBudgets hold) in four waves (non-critical pods, non-critical
// DaemonSet pods, critical pods, critical DaemonSet pods), force what is left once the NodeClaim's
// terminationGracePeriod runs out, wait for volumes to detach, terminate the instance, then release
// the Node and its NodeClaim.
//
// As in Karpenter v1, the NodeClaim's deadline is written on it as the
// karpenter.sh/nodeclaim-termination-timestamp annotation (its deletion time plus
// terminationGracePeriod), and a pod is deleted — past its PodDisruptionBudget and do-not-disrupt —
// as soon as waiting longer would not leave it its own terminationGracePeriodSeconds before the
// deadline, so every pod gets its full grace period.
package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/indexes"
)

// Options tune draining.
type Options struct {
	// EvictionRetry is how soon a drain is retried after an eviction was refused (HTTP 429: a PDB).
	EvictionRetry time.Duration
	// DrainPoll is how often a drain re-checks for pods still terminating when no pod event woke it
	// sooner (wake.go).
	DrainPoll time.Duration
	// MaxConcurrentEvictions is how many of a drain's evictions are in flight at once (evictAll);
	// 1 evicts one after the other.
	MaxConcurrentEvictions int
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{EvictionRetry: 2 * time.Second, DrainPoll: time.Second, MaxConcurrentEvictions: 16}
}

// Controller drains and releases Nodes.
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	recorder events.EventRecorder
	clock    clock.PassiveClock
	opts     Options
	// waiting are the nodes whose drain waits on pods; pod events wake them (wake.go).
	waiting waitingDrains
}

// New returns the termination controller.
func New(kube client.Client, cloud cloudprovider.CloudProvider, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Controller {
	return &Controller{kube: kube, cloud: cloud, recorder: recorder, clock: clk, opts: opts, waiting: waitingDrains{nodes: map[string]bool{}}}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch

// Reconcile drains one deleting Node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		c.waiting.set(req.Name, false)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) {
		c.waiting.set(req.Name, false)
		return reconcile.Result{}, nil
	}
	nc, err := c.claimFor(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := c.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	end, err := c.deadline(ctx, node, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	remaining, retry, err := c.drain(ctx, node, nc, end)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.waiting.set(node.Name, remaining > 0)
	if remaining > 0 {
		wait := c.opts.DrainPoll
		if retry {
			wait = c.opts.EvictionRetry
		}
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	attached, err := c.volumesAttached(ctx, node, end)
	if err != nil {
		return reconcile.Result{}, err
	}
	if attached > 0 {
		return reconcile.Result{RequeueAfter: c.opts.DrainPoll}, nil
	}
	if nc != nil {
		if err := c.cloud.Delete(ctx, nc); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			return reconcile.Result{}, fmt.Errorf("terminating instance of node %s: %w", node.Name, err)
		}
	}
	stored := node.DeepCopy()
	controllerutil.RemoveFinalizer(node, v1.TerminationFinalizer)
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer from node %s: %w", node.Name, err))
	}
	log.FromContext(ctx).Info("drained and terminated node", "node", node.Name)
	c.recorder.Eventf(node, nil, corev1.EventTypeNormal, "Terminated", "Terminate", "Node drained and its instance terminated")
	if nc != nil && nc.DeletionTimestamp.IsZero() {
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of node %s: %w", nc.Name, node.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

func (c *Controller) claimFor(ctx context.Context, node *corev1.Node) (*v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	claims := &v1.NodeClaimList{}
	if err := c.kube.List(ctx, claims, client.MatchingFields{indexes.NodeClaimProviderID: node.Spec.ProviderID}); err != nil {
		return nil, fmt.Errorf("finding nodeclaim of node %s: %w", node.Name, err)
	}
	if len(claims.Items) == 0 {
		return nil, nil
	}
	return &claims.Items[0], nil
}

// deadline is when the node must be gone (nil: no terminationGracePeriod, no deadline). It is the
// claim's karpenter.sh/nodeclaim-termination-timestamp; a claim with a terminationGracePeriod and no
// annotation yet gets one: its deletion time (the Node's while the claim is not being deleted) plus
// terminationGracePeriod. The annotation, once written, is never extended.
func (c *Controller) deadline(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim) (*time.Time, error) {
	if nc == nil {
		return nil, nil
	}
	if value, ok := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t, err := time.Parse(time.RFC3339, value)
		if err == nil {
			return &t, nil
		}
		log.FromContext(ctx).Info("ignoring unparsable termination timestamp", "nodeclaim", klog.KObj(nc), "value", value)
	}
	if nc.Spec.TerminationGracePeriod == nil {
		return nil, nil
	}
	start := node.DeletionTimestamp.Time
	if !nc.DeletionTimestamp.IsZero() {
		start = nc.DeletionTimestamp.Time
	}
	end := start.Add(nc.Spec.TerminationGracePeriod.Duration).Truncate(time.Second)
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey] = end.UTC().Format(time.RFC3339)
	if err := c.kube.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("annotating nodeclaim %s with its termination timestamp: %w", nc.Name, err)
	}
	c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "TerminationGracePeriodExpiring", "Terminate",
		"All pods will be deleted by %s", nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey])
	return &end, nil
}

// taint keeps new pods off the node while it drains.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
			return nil
		}
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedNoScheduleTaint)
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node %s: %w", node.Name, err)
	}
	return nil
}

// Register sets the controller up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("node.termination").For(&corev1.Node{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.drainsWokenBy)).Complete(c)
}
