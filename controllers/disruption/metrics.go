package disruption

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/metrics"
)

// Names, labels and buckets are Karpenter v1.15's (docs/metrics.md), so its dashboards keep working.
var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_voluntary_disruption_decisions_total",
		Help: "Number of disruption decisions, by decision (delete, replace), reason (empty, underutilized, drifted) and consolidation type (empty, single, multi; empty for drift).",
	}, []string{"decision", metrics.LabelReason, "consolidation_type"})
	eligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_voluntary_disruption_eligible_nodes",
		Help: "Number of nodes eligible for disruption, by reason.",
	}, []string{metrics.LabelReason})
	decisionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
		Help:    "Duration of one disruption pass's evaluation (snapshot and whole-cluster consolidation plan), by reason and consolidation type. Its count is the number of passes that evaluated.",
		Buckets: metrics.DurationBuckets(),
	}, []string{metrics.LabelReason, "consolidation_type"})
	allowedDisruptionsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodepools_allowed_disruptions",
		Help: "Number of nodes a NodePool may disrupt now, by nodepool and reason.",
	}, []string{metrics.LabelNodePool, metrics.LabelReason})
)

// Joist's consolidation plans every candidate together: Karpenter's multi-node consolidation.
const consolidationTypeMulti = "multi"

// consolidationType is Karpenter's consolidation_type of a command: empty for emptiness, single or
// multi by the number of nodes an underutilized command removes, "" for drift.
func consolidationType(cmd *command) string {
	switch {
	case cmd.reason == v1.DisruptionReasonEmpty:
		return "empty"
	case cmd.reason != v1.DisruptionReasonUnderutilized:
		return ""
	case len(cmd.targets) > 1:
		return consolidationTypeMulti
	}
	return "single"
}

func init() {
	crmetrics.Registry.MustRegister(decisionsTotal, eligibleNodes, decisionDuration, allowedDisruptionsGauge)
}
