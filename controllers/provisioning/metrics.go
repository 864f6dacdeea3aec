package provisioning

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/joist-dev/joist/controllers/metrics"
)

// reasonProvisioned is karpenter_nodeclaims_created_total's reason for a claim the provisioner launched.
const reasonProvisioned = "provisioned"

// Names, labels and buckets are Karpenter v1.15's (docs/metrics.md), so its dashboards keep working.
var (
	nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodeclaims_created_total",
		Help: "Number of nodeclaims created, by reason (provisioned), nodepool and whether minValues was relaxed (never, in Joist).",
	}, []string{metrics.LabelReason, metrics.LabelNodePool, "min_values_relaxed"})
	schedulingDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "karpenter_scheduler_scheduling_duration_seconds",
		Help:    "Duration of one provisioning batch (snapshot and solve), by controller.",
		Buckets: metrics.DurationBuckets(),
	}, []string{metrics.LabelController})
	// schedulingDuration is the provisioner's series of karpenter_scheduler_scheduling_duration_seconds.
	schedulingDuration = schedulingDurationSeconds.WithLabelValues("provisioner")
)

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsCreated, schedulingDurationSeconds)
}

// CountNodeClaimCreated counts a claim launched for another reason than provisioning (the disruption
// loop's replacements: reason is the disruption reason, lower case, as Karpenter's).
func CountNodeClaimCreated(pool, reason string) {
	nodeClaimsCreated.WithLabelValues(reason, pool, "false").Inc()
}
