package provisioning

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names follow Karpenter's where they exist, so existing dashboards keep working.
var (
	nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_created_total",
		Help: "Number of nodeclaims created, by nodepool and reason.",
	}, []string{"nodepool", "reason"})
	schedulingDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "karpenter_provisioner_scheduling_duration_seconds",
		Help:    "Duration of one provisioning batch: snapshot and solve.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	})
)

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsCreated, schedulingDuration)
}
