// Package nodepool keeps the per-pool series: karpenter_nodepools_limit, karpenter_nodepools_usage,
// joist_nodepool_nodes (read from the status the nodepool controller writes) and
// karpenter_nodepools_cost_total (the offering prices of the pool's live NodeClaims). A deleted pool's
// series are deleted, and so are those of a resource that left the pool's limits or usage.
package nodepool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/controllers/metrics/node"
	"github.com/joist-dev/joist/controllers/nodepool"
)

var (
	// Limit is karpenter_nodepools_limit.
	Limit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodepools_limit",
		Help: "The nodepool's spec.limits, by resource type.",
	}, []string{"nodepool", "resource_type"})
	// Usage is karpenter_nodepools_usage.
	Usage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodepools_usage",
		Help: "Capacity of the nodepool's nodes (status.resources), by resource type.",
	}, []string{"nodepool", "resource_type"})
	// Nodes is joist_nodepool_nodes (Karpenter has no such series).
	Nodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "joist_nodepool_nodes",
		Help: "Number of live nodeclaims of the nodepool (status.nodes).",
	}, []string{"nodepool"})
	// CostPerHour is karpenter_nodepools_cost_total.
	CostPerHour = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodepools_cost_total",
		Help: "Total cost of the nodepool: the sum of the hourly offering prices of its live NodeClaims, in the catalog's currency (USD for the built-in catalogs). Not a billing source.",
	}, []string{"nodepool"})
)

func init() { crmetrics.Registry.MustRegister(Limit, Usage, Nodes, CostPerHour) }

// Controller maintains one pool's series per reconcile.
type Controller struct {
	kube          client.Client
	instanceTypes node.InstanceTypesFunc
	// informers, when set (Register), serve the pool's claims from the cache's store.
	informers ctrlcache.Informers

	mu      sync.Mutex
	written map[string]map[*prometheus.GaugeVec][]string // pool → resource types last written per vector
	costAt  map[string]time.Time                         // pool → when its cost was last summed
}

// costEvery is the least time between two sums of one pool's cost. Every event of one of its claims
// reconciles the pool, and summing all its claims each time made this loop an eighth of the
// manager's CPU while a thousand claims launched (quadratic in the claims); the gauge lags by at most
// this much instead.
const costEvery = time.Second

// New returns the NodePool metrics loop; instanceTypes prices the claims (nil: no karpenter_nodepools_cost_total).
func New(kube client.Client, instanceTypes node.InstanceTypesFunc) *Controller {
	return &Controller{kube: kube, instanceTypes: instanceTypes, written: map[string]map[*prometheus.GaugeVec][]string{},
		costAt: map[string]time.Time{}}
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools;nodeclaims,verbs=get;list;watch

// Reconcile writes the pool's series and deletes those it no longer has.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &v1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		if apierrors.IsNotFound(err) {
			c.mu.Lock()
			delete(c.written, req.Name)
			delete(c.costAt, req.Name)
			c.mu.Unlock()
			deletePool(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodepool %s: %w", req.Name, err)
	}
	c.setResources(Limit, np.Name, corev1.ResourceList(np.Spec.Limits))
	c.setResources(Usage, np.Name, np.Status.Resources)
	if np.Status.Nodes != nil {
		Nodes.WithLabelValues(np.Name).Set(float64(*np.Status.Nodes))
	}
	if c.instanceTypes == nil {
		return reconcile.Result{}, nil
	}
	c.mu.Lock()
	last := c.costAt[np.Name]
	c.mu.Unlock()
	if wait := costEvery - time.Since(last); !last.IsZero() && wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil // later events within the wait coalesce
	}
	cost, err := c.cost(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.mu.Lock()
	c.costAt[np.Name] = time.Now()
	c.mu.Unlock()
	CostPerHour.WithLabelValues(np.Name).Set(cost)
	return reconcile.Result{}, nil
}

// cost sums the offering prices of the pool's launched, not deleting claims.
func (c *Controller) cost(ctx context.Context, np *v1.NodePool) (float64, error) {
	// Every claim event of the pool reconciles it: a deep copy of all its claims each time made this
	// loop the manager's largest allocator while a thousand claims launched. Read-only here, the
	// store's own claims (a List's typed copy was 15 MB of the heap at 5,000 claims).
	claims, err := cachedobjects.Objects[v1.NodeClaim](ctx, c.informers, c.kube, &v1.NodeClaimList{}, nodepool.InPool(np.Name))
	if err != nil {
		return 0, fmt.Errorf("listing nodeclaims of nodepool %s: %w", np.Name, err)
	}
	its, err := c.instanceTypes(ctx, np)
	if err != nil {
		return 0, fmt.Errorf("pricing nodepool %s: %w", np.Name, err)
	}
	var sum float64
	for _, nc := range claims {
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if p, ok := catalog.OfferingPrice(its, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey]); ok {
			sum += p
		}
	}
	return sum, nil
}

// setResources writes one series per resource and deletes the pool's series of resources it dropped.
func (c *Controller) setResources(vec *prometheus.GaugeVec, pool string, rl corev1.ResourceList) {
	names := make([]string, 0, len(rl))
	for name, q := range rl {
		vec.WithLabelValues(pool, node.ResourceType(name)).Set(q.AsApproximateFloat64())
		names = append(names, node.ResourceType(name))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written[pool] == nil {
		c.written[pool] = map[*prometheus.GaugeVec][]string{}
	}
	kept := map[string]bool{}
	for _, n := range names {
		kept[n] = true
	}
	for _, old := range c.written[pool][vec] {
		if !kept[old] {
			vec.DeleteLabelValues(pool, old)
		}
	}
	c.written[pool][vec] = names
}

func deletePool(name string) {
	match := prometheus.Labels{"nodepool": name}
	Limit.DeletePartialMatch(match)
	Usage.DeletePartialMatch(match)
	Nodes.DeletePartialMatch(match)
	CostPerHour.DeletePartialMatch(match)
}

// Register sets the loop up with the manager: pool changes and its claims' changes.
func (c *Controller) Register(mgr ctrl.Manager) error {
	c.informers = mgr.GetCache()
	return ctrl.NewControllerManagedBy(mgr).
		Named("metrics.nodepool").
		For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[v1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})).
		Complete(c)
}
