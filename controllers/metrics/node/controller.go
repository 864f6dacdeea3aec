// Package node exports the per-node series of Joist-managed nodes (those labelled
// karpenter.sh/nodepool): karpenter_nodes_allocatable and joist_node_cost_per_hour, computed from the
// cache at scrape time (Collector), and the karpenter_nodes_created_total /
// karpenter_nodes_terminated_total counters, derived from the watch: a node created after the loop
// started counts as created, a tracked node that disappears counts as terminated.
package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/controllers/cachedobjects"
)

// InstanceTypesFunc returns the instance types (with offering prices) a NodePool may launch;
// typically CloudProvider.GetInstanceTypes.
type InstanceTypesFunc func(ctx context.Context, np *v1.NodePool) ([]*catalog.InstanceType, error)

// Controller counts node creations and terminations, one node per reconcile.
type Controller struct {
	kube          client.Client
	informers     ctrlcache.Informers // the manager's cache (Register); nil: nodes read through kube
	instanceTypes InstanceTypesFunc
	started       time.Time

	mu      sync.Mutex
	tracked map[string]poolZone // managed node name → the labels its counters use
}

// poolZone are the labels of the created and terminated counters.
type poolZone struct{ pool, zone string }

// New returns the node metrics loop; instanceTypes prices the nodes (nil: no joist_node_cost_per_hour).
func New(kube client.Client, instanceTypes InstanceTypesFunc, clk clock.PassiveClock) *Controller {
	return &Controller{kube: kube, instanceTypes: instanceTypes, started: clk.Now(), tracked: map[string]poolZone{}}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Reconcile counts the node as created when first seen (if created after the loop started), and as
// terminated when it is gone.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The cache's own node (read only), without the cached Get's deep copy per node event.
	node, err := cachedobjects.Get[corev1.Node](ctx, c.informers, c.kube, req.NamespacedName)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("getting node %s: %w", req.Name, err)
	}
	var pz poolZone
	if err == nil {
		pz = poolZone{pool: node.Labels[v1.NodePoolLabelKey], zone: node.Labels[v1.LabelTopologyZone]}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, seen := c.tracked[req.Name]
	switch {
	case err != nil || pz.pool == "":
		delete(c.tracked, req.Name)
		if seen && err != nil {
			Terminated.WithLabelValues(old.pool, old.zone).Inc()
		}
	case !seen:
		if !node.CreationTimestamp.Time.Before(c.started) {
			Created.WithLabelValues(pz.pool, pz.zone).Inc()
		}
		c.tracked[req.Name] = pz
	default:
		c.tracked[req.Name] = pz
	}
	return reconcile.Result{}, nil
}

// Register sets the loop up with the manager (creations, deletions and label changes reach it) and
// registers the Collector of the per-node series, reading the manager's cache.
func (c *Controller) Register(mgr ctrl.Manager) error {
	c.informers = mgr.GetCache()
	if err := RegisterCollector(c.kube, mgr.GetCache(), c.instanceTypes); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("metrics.node").
		For(&corev1.Node{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(c)
}

// ResourceType is Karpenter's resource_type value of a resource name: lower case, dashes as underscores.
func ResourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}
