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

// Label names; values of method are the interface's method names.
const (
	labelMethod   = "method"
	labelProvider = "provider"
	labelError    = "error"
)

var (
	// Duration is karpenter_cloudprovider_duration_seconds.
	Duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "karpenter_cloudprovider_duration_seconds",
		Help:    "Duration of cloud provider method calls, by method and provider.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{labelMethod, labelProvider})
	// Errors is karpenter_cloudprovider_errors_total.
	Errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_errors_total",
		Help: "Failed cloud provider method calls, by method, provider and error kind (NodeClaimNotFoundError, InsufficientCapacityError, other).",
	}, []string{labelMethod, labelProvider, labelError})
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

func (d *decorator) observe(method string, start time.Time, err error) {
	Duration.WithLabelValues(method, d.Name()).Observe(time.Since(start).Seconds())
	if err != nil {
		Errors.WithLabelValues(method, d.Name(), errorKind(err)).Inc()
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
	defer func(start time.Time) { d.observe("Create", start, err) }(time.Now())
	return d.CloudProvider.Create(ctx, nc)
}

func (d *decorator) Delete(ctx context.Context, nc *v1.NodeClaim) (err error) {
	defer func(start time.Time) { d.observe("Delete", start, err) }(time.Now())
	return d.CloudProvider.Delete(ctx, nc)
}

func (d *decorator) Get(ctx context.Context, providerID string) (_ *v1.NodeClaim, err error) {
	defer func(start time.Time) { d.observe("Get", start, err) }(time.Now())
	return d.CloudProvider.Get(ctx, providerID)
}

func (d *decorator) List(ctx context.Context) (_ []*v1.NodeClaim, err error) {
	defer func(start time.Time) { d.observe("List", start, err) }(time.Now())
	return d.CloudProvider.List(ctx)
}

func (d *decorator) GetInstanceTypes(ctx context.Context, np *v1.NodePool) (_ []*catalog.InstanceType, err error) {
	defer func(start time.Time) { d.observe("GetInstanceTypes", start, err) }(time.Now())
	return d.CloudProvider.GetInstanceTypes(ctx, np)
}

func (d *decorator) IsDrifted(ctx context.Context, nc *v1.NodeClaim) (_ cloudprovider.DriftReason, err error) {
	defer func(start time.Time) { d.observe("IsDrifted", start, err) }(time.Now())
	return d.CloudProvider.IsDrifted(ctx, nc)
}
