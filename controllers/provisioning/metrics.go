package provisioning

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/joist-dev/joist/controllers/metrics"
)

// Names, labels and buckets are Karpenter v1.15's (docs/metrics.md), so its dashboards keep working.
var (
	schedulingDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "karpenter_scheduler_scheduling_duration_seconds",
		Help:    "Duration of one provisioning batch (snapshot and solve), by controller.",
		Buckets: metrics.DurationBuckets(),
	}, []string{metrics.LabelController})
	// schedulingDuration is the provisioner's series of karpenter_scheduler_scheduling_duration_seconds.
	schedulingDuration = schedulingDurationSeconds.WithLabelValues("provisioner")
)

func init() {
	crmetrics.Registry.MustRegister(schedulingDurationSeconds)
}
