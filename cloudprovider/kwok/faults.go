package kwok

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	"github.com/joist-dev/joist/cloudprovider"
)

// SoldOutAnnotationKey on a KWOKNodeClass lists offerings (instanceType:zone:capacityType, comma
// separated) that fail with insufficient capacity from now on: an offering turning unavailable
// mid-run, as a real zone running out of a type does.
const SoldOutAnnotationKey = "kwok.joist.dev/sold-out"

// Faults are the cloud API failures the simulated cloud injects, for reliability tests.
type Faults struct {
	// DeleteErrorRate is the fraction (0–1) of terminations that fail with a transient error.
	DeleteErrorRate float64
	// LatencySpikeRate is the fraction (0–1) of API calls delayed by LatencySpike.
	LatencySpikeRate float64
	LatencySpike     time.Duration
}

// cloudCalls counts the simulated cloud's API calls, so tests can bound the rate Joist calls it at.
var cloudCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "joist_kwok_cloud_api_calls_total",
	Help: "Calls to the simulated KWOK cloud's API, by method and outcome.",
}, []string{"method", "outcome"})

func init() { crmetrics.Registry.MustRegister(cloudCalls) }

// call records one API call and applies the latency faults; done records its outcome.
func (c *CloudProvider) call(ctx context.Context, method string) (done func(error)) {
	if c.opts.Faults.LatencySpikeRate > 0 && c.chance(c.opts.Faults.LatencySpikeRate) {
		select {
		case <-ctx.Done():
		case <-time.After(c.opts.Faults.LatencySpike):
		}
	}
	return func(err error) {
		outcome := "ok"
		switch {
		case err == nil:
		case cloudprovider.IsNodeClaimNotFoundError(err):
			outcome = "not_found"
		case cloudprovider.IsInsufficientCapacityError(err):
			outcome = "insufficient_capacity"
		default:
			outcome = "error"
		}
		cloudCalls.WithLabelValues(method, outcome).Inc()
	}
}

func (c *CloudProvider) chance(p float64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rng.Float64() < p
}

// injectDeleteFailure fails a termination at DeleteErrorRate.
func (c *CloudProvider) injectDeleteFailure() error {
	if c.opts.Faults.DeleteErrorRate > 0 && c.chance(c.opts.Faults.DeleteErrorRate) {
		return fmt.Errorf("kwok: injected terminate failure (error rate %.0f%%)", c.opts.Faults.DeleteErrorRate*100)
	}
	return nil
}

// soldOutNow reports whether an offering is sold out: by Options, or by the NodeClass annotation.
func (c *CloudProvider) soldOutNow(o cloudprovider.UnavailableOffering, nodeClass *kwokv1alpha1.KWOKNodeClass) bool {
	if c.soldOut[o] {
		return true
	}
	for _, s := range strings.Split(nodeClass.Annotations[SoldOutAnnotationKey], ",") {
		if strings.TrimSpace(s) == o.InstanceType+":"+o.Zone+":"+o.CapacityType {
			return true
		}
	}
	return false
}
