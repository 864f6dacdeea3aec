// Package nodeclaim counts NodeClaim endings from the watch: karpenter_nodeclaims_terminated_total
// when a tracked claim is gone, and karpenter_nodeclaims_disrupted_total when a claim starts deleting
// while a disruption condition says why (Disrupting's reason, else Empty, Drifted or Consolidatable),
// or at or after its expireAfter (expired).
// Claims already deleting when the loop started are not counted again.
package nodeclaim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/controllers/metrics"
	"github.com/joist-dev/joist/disruptionpolicy"
)

var (
	// Terminated is karpenter_nodeclaims_terminated_total.
	Terminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_terminated_total",
		Help: "NodeClaims whose deletion completed, by nodepool, capacity type and zone.",
	}, []string{metrics.LabelNodePool, metrics.LabelCapacityType, metrics.LabelZone})
	// Disrupted is karpenter_nodeclaims_disrupted_total.
	Disrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_disrupted_total",
		Help: "NodeClaims deleted by disruption, by reason (empty, underutilized, drifted, or the Disrupting condition's reason, snake_cased), nodepool, capacity type, the pool's consolidation policy and the termination mode.",
	}, []string{metrics.LabelReason, metrics.LabelNodePool, metrics.LabelCapacityType, metrics.LabelConsolidationPolicy, metrics.LabelTerminationMode})
)

func init() { crmetrics.Registry.MustRegister(Terminated, Disrupted) }

// claim is what the loop remembers of a live NodeClaim.
type claim struct {
	pool, capacityType, zone string
	deleting                 bool
}

// Controller derives the NodeClaim counters.
type Controller struct {
	kube      client.Client
	informers ctrlcache.Informers // the manager's cache (Register); nil: claims read through kube
	started   time.Time

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
	// The cache's own claim (read only): a deep copy per claim event was 1.4 % of all the manager
	// allocated at 5,000 pods (docs/scale.md).
	nc, err := cachedobjects.Get[v1.NodeClaim](ctx, c.informers, c.kube, req.NamespacedName)
	if err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("getting nodeclaim %s: %w", req.Name, err)
		}
		c.mu.Lock()
		old, seen := c.tracked[req.NamespacedName]
		delete(c.tracked, req.NamespacedName)
		c.mu.Unlock()
		if seen {
			Terminated.WithLabelValues(old.pool, old.capacityType, old.zone).Inc()
		}
		return reconcile.Result{}, nil
	}
	now := claim{pool: nc.Labels[v1.NodePoolLabelKey], capacityType: nc.Labels[v1.CapacityTypeLabelKey], zone: nc.Labels[v1.LabelTopologyZone],
		deleting: !nc.DeletionTimestamp.IsZero()}
	c.mu.Lock()
	old, seen := c.tracked[req.NamespacedName]
	c.tracked[req.NamespacedName] = now
	c.mu.Unlock()
	startedDeleting := now.deleting && (!seen || !old.deleting) && !nc.DeletionTimestamp.Time.Before(c.started)
	if startedDeleting {
		if reason := DisruptionReason(nc); reason != "" {
			policy, err := c.consolidationPolicy(ctx, now.pool)
			if err != nil {
				return reconcile.Result{}, err
			}
			Disrupted.WithLabelValues(snakeCase(reason), now.pool, now.capacityType, policy, terminationMode(nc)).Inc()
		}
	}
	return reconcile.Result{}, nil
}

// DisruptionReason is why a deleting claim was disrupted, read from its conditions, else Expired when
// its deletion came at or after its expireAfter; empty otherwise (deleted by a user or garbage
// collection).
func DisruptionReason(nc *v1.NodeClaim) string {
	if c := nc.GetCondition(v1.ConditionTypeDisrupting); c != nil && c.Status == "True" && c.Reason != "" {
		return c.Reason
	}
	if !nc.DeletionTimestamp.IsZero() && disruptionpolicy.Expired(nc, nc.DeletionTimestamp.Time) {
		return "Expired"
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

// consolidationPolicy is the pool's policy snake_cased as Karpenter labels it ("" when the pool is gone).
func (c *Controller) consolidationPolicy(ctx context.Context, pool string) (string, error) {
	np := &v1.NodePool{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return "", client.IgnoreNotFound(fmt.Errorf("getting nodepool %s: %w", pool, err))
	}
	return snakeCase(string(np.Spec.Disruption.ConsolidationPolicy)), nil
}

// terminationMode is Karpenter's termination_mode of a claim: graceful without a terminationGracePeriod,
// eventual with a positive one, forceful with zero.
func terminationMode(nc *v1.NodeClaim) string {
	switch tgp := nc.Spec.TerminationGracePeriod; {
	case tgp == nil:
		return metrics.TerminationModeGraceful
	case tgp.Duration > 0:
		return metrics.TerminationModeEventual
	}
	return metrics.TerminationModeForceful
}

// snakeCase writes a CamelCase reason or policy as Karpenter's label values: WhenEmptyOrUnderutilized →
// when_empty_or_underutilized.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Register sets the loop up with the manager.
func (c *Controller) Register(mgr ctrl.Manager) error {
	c.informers = mgr.GetCache()
	return ctrl.NewControllerManagedBy(mgr).Named("metrics.nodeclaim").For(&v1.NodeClaim{}).Complete(c)
}
