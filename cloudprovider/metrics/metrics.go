// Package metrics wraps a cloudprovider.CloudProvider so that every call is timed and every failure
// counted, under Karpenter's metric names (karpenter_cloudprovider_duration_seconds and
// karpenter_cloudprovider_errors_total), whichever provider sits behind it.
package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// Label names, as Karpenter's; values of method are the interface's method names. controller is
// registered for Karpenter's queries but left empty: the decorator cannot tell which loop calls it.
const (
	labelController = "controller"
	labelMethod     = "method"
	labelProvider   = "provider"
	labelError      = "error"
	labelNodePool   = "nodepool"
)

var (
	// Duration is karpenter_cloudprovider_duration_seconds.
	Duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "karpenter_cloudprovider_duration_seconds",
		Help:    "Duration of cloud provider method calls, by controller (empty), method and provider.",
		Buckets: prometheus.DefBuckets, // Karpenter's
	}, []string{labelController, labelMethod, labelProvider})
	// Errors is karpenter_cloudprovider_errors_total.
	Errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_errors_total",
		Help: "Failed cloud provider method calls, by controller (empty), method, provider, nodepool (of the claim or pool the call was about) and error kind (NodeClaimNotFoundError, InsufficientCapacityError, ContextError, other).",
	}, []string{labelController, labelMethod, labelProvider, labelError, labelNodePool})
)

func init() { crmetrics.Registry.MustRegister(Duration, Errors) }

// decorator times and counts the calls of the provider it wraps.
type decorator struct {
	cloudprovider.CloudProvider
}

// Decorate returns cp with every call measured. Decorating twice is a no-op.
func Decorate(cp cloudprovider.CloudProvider) cloudprovider.CloudProvider {
	if _, ok := cp.(*decorator); ok {
		return cp
	}
	return &decorator{CloudProvider: cp}
}

// Unwrap returns the provider underneath, so its optional interfaces stay reachable (cloudprovider.As).
func (d *decorator) Unwrap() cloudprovider.CloudProvider { return d.CloudProvider }

func (d *decorator) observe(method, pool string, start time.Time, err error) {
	Duration.WithLabelValues("", method, d.Name()).Observe(time.Since(start).Seconds())
	if err != nil {
		Errors.WithLabelValues("", method, d.Name(), errorKind(err), pool).Inc()
	}
}

// errorKind is a bounded label value for err.
func errorKind(err error) string {
	switch {
	case cloudprovider.IsNodeClaimNotFoundError(err):
		return "NodeClaimNotFoundError"
	case cloudprovider.IsInsufficientCapacityError(err):
		return "InsufficientCapacityError"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "ContextError"
	default:
		return "other"
	}
}

func (d *decorator) Create(ctx context.Context, nc *v1.NodeClaim) (_ *v1.NodeClaim, err error) {
	defer func(start time.Time) { d.observe("Create", nc.Labels[v1.NodePoolLabelKey], start, err) }(time.Now())
	return d.CloudProvider.Create(ctx, nc)
}

func (d *decorator) Delete(ctx context.Context, nc *v1.NodeClaim) (err error) {
	defer func(start time.Time) { d.observe("Delete", nc.Labels[v1.NodePoolLabelKey], start, err) }(time.Now())
	return d.CloudProvider.Delete(ctx, nc)
}

func (d *decorator) Get(ctx context.Context, providerID string) (_ *v1.NodeClaim, err error) {
	defer func(start time.Time) { d.observe("Get", "", start, err) }(time.Now())
	return d.CloudProvider.Get(ctx, providerID)
}

func (d *decorator) List(ctx context.Context) (_ []*v1.NodeClaim, err error) {
	defer func(start time.Time) { d.observe("List", "", start, err) }(time.Now())
	return d.CloudProvider.List(ctx)
}

func (d *decorator) GetInstanceTypes(ctx context.Context, np *v1.NodePool) (_ []*catalog.InstanceType, err error) {
	defer func(start time.Time) { d.observe("GetInstanceTypes", poolName(np), start, err) }(time.Now())
	return d.CloudProvider.GetInstanceTypes(ctx, np)
}

func (d *decorator) IsDrifted(ctx context.Context, nc *v1.NodeClaim) (_ cloudprovider.DriftReason, err error) {
	defer func(start time.Time) { d.observe("IsDrifted", nc.Labels[v1.NodePoolLabelKey], start, err) }(time.Now())
	return d.CloudProvider.IsDrifted(ctx, nc)
}

func poolName(np *v1.NodePool) string {
	if np == nil {
		return ""
	}
	return np.Name
}
