// Package node keeps the per-node series of Joist-managed nodes (those labelled karpenter.sh/nodepool):
// karpenter_nodes_allocatable, joist_node_cost_per_hour, and the karpenter_nodes_created_total /
// karpenter_nodes_terminated_total counters, derived from the watch: a node created after the loop
// started counts as created, a tracked node that disappears counts as terminated.
package node

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// InstanceTypesFunc returns the instance types (with offering prices) a NodePool may launch;
// typically CloudProvider.GetInstanceTypes.
type InstanceTypesFunc func(ctx context.Context, np *v1.NodePool) ([]*catalog.InstanceType, error)

// Controller maintains the series of one node per reconcile.
type Controller struct {
	kube          client.Client
	instanceTypes InstanceTypesFunc
	clock         clock.PassiveClock
	started       time.Time

	mu      sync.Mutex
	tracked map[string]prometheus.Labels // node name → the labels its series were written with
}

// New returns the node metrics loop; instanceTypes prices the nodes (nil: no joist_node_cost_per_hour).
func New(kube client.Client, instanceTypes InstanceTypesFunc, clk clock.PassiveClock) *Controller {
	return &Controller{kube: kube, instanceTypes: instanceTypes, clock: clk, started: clk.Now(), tracked: map[string]prometheus.Labels{}}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Reconcile writes the node's series, or deletes them when the node is gone or no longer managed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	err := c.kube.Get(ctx, req.NamespacedName, node)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("getting node %s: %w", req.Name, err)
	}
	pool := node.Labels[v1.NodePoolLabelKey]
	if err != nil || pool == "" {
		c.forget(req.Name, err != nil)
		return reconcile.Result{}, nil
	}
	labels := Labels(node)
	if !c.track(node, labels) {
		c.deleteSeries(node.Name)
		c.remember(node.Name, labels)
	}
	for name, q := range node.Status.Allocatable {
		Allocatable.With(withResource(labels, name)).Set(q.AsApproximateFloat64())
	}
	price, ok, err := c.price(ctx, node, pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	if ok {
		CostPerHour.With(costLabels(labels, node.Labels[v1.LabelArch])).Set(price)
	}
	return reconcile.Result{}, nil
}

// track counts a newly seen node as created (when it was created after the loop started) and reports
// whether its series are already written under labels.
func (c *Controller) track(node *corev1.Node, labels prometheus.Labels) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, seen := c.tracked[node.Name]
	if !seen && !node.CreationTimestamp.Time.Before(c.started) {
		Created.WithLabelValues(labels["nodepool"], labels["zone"]).Inc()
	}
	if seen && sameLabels(old, labels) {
		return true
	}
	return false
}

func (c *Controller) remember(name string, labels prometheus.Labels) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracked[name] = labels
}

// forget deletes a node's series; gone says the node itself was deleted (counted as terminated).
func (c *Controller) forget(name string, gone bool) {
	c.mu.Lock()
	labels, seen := c.tracked[name]
	delete(c.tracked, name)
	c.mu.Unlock()
	if !seen {
		return
	}
	if gone {
		Terminated.WithLabelValues(labels["nodepool"], labels["zone"]).Inc()
	}
	deleteNode(labels)
}

func (c *Controller) deleteSeries(name string) {
	c.mu.Lock()
	labels, seen := c.tracked[name]
	c.mu.Unlock()
	if seen {
		deleteNode(labels)
	}
}

// deleteNode removes every series written for the node.
func deleteNode(labels prometheus.Labels) {
	match := prometheus.Labels{"node_name": labels["node_name"]}
	Allocatable.DeletePartialMatch(match)
	CostPerHour.DeletePartialMatch(prometheus.Labels{"node": labels["node_name"]})
}

// price is the hourly price of the node's offering in its pool's catalog.
func (c *Controller) price(ctx context.Context, node *corev1.Node, pool string) (float64, bool, error) {
	if c.instanceTypes == nil {
		return 0, false, nil
	}
	np := &v1.NodePool{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return 0, false, client.IgnoreNotFound(fmt.Errorf("getting nodepool %s of node %s: %w", pool, node.Name, err))
	}
	its, err := c.instanceTypes(ctx, np)
	if err != nil {
		return 0, false, fmt.Errorf("pricing node %s: %w", node.Name, err)
	}
	p, ok := catalog.OfferingPrice(its, node.Labels[v1.LabelInstanceType], node.Labels[v1.LabelTopologyZone], node.Labels[v1.CapacityTypeLabelKey])
	return p, ok, nil
}

// Register sets the loop up with the manager. Status-only heartbeats (lease renewals do not reach
// Nodes, but condition heartbeats do) are skipped unless labels or allocatable change.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("metrics.node").
		For(&corev1.Node{}, builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, allocatableChanged{}))).
		Complete(c)
}

// allocatableChanged passes creates, deletes and updates that change status.allocatable.
type allocatableChanged struct{ predicate.Funcs }

func (allocatableChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	if len(o.Status.Allocatable) != len(n.Status.Allocatable) {
		return true
	}
	for k, q := range n.Status.Allocatable {
		if oq, ok := o.Status.Allocatable[k]; !ok || !oq.Equal(q) {
			return true
		}
	}
	return false
}

func withResource(l prometheus.Labels, name corev1.ResourceName) prometheus.Labels {
	out := prometheus.Labels{"resource_type": ResourceType(name)}
	for k, v := range l {
		out[k] = v
	}
	return out
}

// costLabels follow OpenCost's node labels (node, instance_type, region-less zone, arch) plus the
// Karpenter pool and capacity type.
func costLabels(l prometheus.Labels, arch string) prometheus.Labels {
	return prometheus.Labels{"node": l["node_name"], "nodepool": l["nodepool"], "instance_type": l["instance_type"],
		"capacity_type": l["capacity_type"], "zone": l["zone"], "arch": arch}
}

// ResourceType is Karpenter's resource_type value of a resource name: lower case, dashes as underscores.
func ResourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

func sameLabels(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
