// Package nodeclaim counts NodeClaim endings from the watch: karpenter_nodeclaims_terminated_total
// when a tracked claim is gone, and karpenter_nodeclaims_disrupted_total when a claim starts deleting
// while a disruption condition says why (Disrupting's reason, else Empty, Drifted or Consolidatable).
// Claims already deleting when the loop started are not counted again.
package nodeclaim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
)

var (
	// Terminated is karpenter_nodeclaims_terminated_total.
	Terminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_terminated_total",
		Help: "NodeClaims whose deletion completed, by nodepool and capacity type.",
	}, []string{"nodepool", "capacity_type"})
	// Disrupted is karpenter_nodeclaims_disrupted_total.
	Disrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_disrupted_total",
		Help: "NodeClaims deleted by disruption, by nodepool, capacity type and reason (Empty, Underutilized, Drifted, or the Disrupting condition's reason).",
	}, []string{"nodepool", "capacity_type", "reason"})
)

func init() { crmetrics.Registry.MustRegister(Terminated, Disrupted) }

// claim is what the loop remembers of a live NodeClaim.
type claim struct {
	pool, capacityType string
	deleting           bool
}

// Controller derives the NodeClaim counters.
type Controller struct {
	kube    client.Client
	started time.Time

	mu      sync.Mutex
	tracked map[types.NamespacedName]claim
}

// New returns the NodeClaim metrics loop.
func New(kube client.Client, clk clock.PassiveClock) *Controller {
	return &Controller{kube: kube, started: clk.Now(), tracked: map[types.NamespacedName]claim{}}
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch

// Reconcile updates the counters for one claim.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &v1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("getting nodeclaim %s: %w", req.Name, err)
		}
		c.mu.Lock()
		old, seen := c.tracked[req.NamespacedName]
		delete(c.tracked, req.NamespacedName)
		c.mu.Unlock()
		if seen {
			Terminated.WithLabelValues(old.pool, old.capacityType).Inc()
		}
		return reconcile.Result{}, nil
	}
	now := claim{pool: nc.Labels[v1.NodePoolLabelKey], capacityType: nc.Labels[v1.CapacityTypeLabelKey], deleting: !nc.DeletionTimestamp.IsZero()}
	c.mu.Lock()
	old, seen := c.tracked[req.NamespacedName]
	c.tracked[req.NamespacedName] = now
	c.mu.Unlock()
	startedDeleting := now.deleting && (!seen || !old.deleting) && !nc.DeletionTimestamp.Time.Before(c.started)
	if startedDeleting {
		if reason := DisruptionReason(nc); reason != "" {
			Disrupted.WithLabelValues(now.pool, now.capacityType, reason).Inc()
		}
	}
	return reconcile.Result{}, nil
}

// DisruptionReason is why a deleting claim was disrupted, read from its conditions; empty when no
// disruption condition is True (deleted by a user, expiry, or garbage collection).
func DisruptionReason(nc *v1.NodeClaim) string {
	if c := nc.GetCondition(v1.ConditionTypeDisrupting); c != nil && c.Status == "True" && c.Reason != "" {
		return c.Reason
	}
	for _, r := range []struct{ condition, reason string }{
		{v1.ConditionTypeDrifted, string(v1.DisruptionReasonDrifted)},
		{v1.ConditionTypeEmpty, string(v1.DisruptionReasonEmpty)},
		{v1.ConditionTypeConsolidatable, string(v1.DisruptionReasonUnderutilized)},
	} {
		if nc.IsTrue(r.condition) {
			return r.reason
		}
	}
	return ""
}

// Register sets the loop up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("metrics.nodeclaim").For(&v1.NodeClaim{}).Complete(c)
}
