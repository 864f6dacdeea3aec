package disruption

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names follow Karpenter's, so existing dashboards keep working.
var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_voluntary_disruption_decisions_total",
		Help: "Number of disruption decisions, by decision (delete, replace) and reason (empty, underutilized, drifted).",
	}, []string{"decision", "reason"})
	eligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_voluntary_disruption_eligible_nodes",
		Help: "Number of nodes eligible for disruption, by reason.",
	}, []string{"reason"})
	decisionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
		Help:    "Duration of one disruption decision (snapshot and plan), by method.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"method"})
	allowedDisruptionsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodepools_allowed_disruptions",
		Help: "Number of nodes a NodePool may disrupt now, by nodepool and reason.",
	}, []string{"nodepool", "reason"})
)

func init() {
	crmetrics.Registry.MustRegister(decisionsTotal, eligibleNodes, decisionDuration, allowedDisruptionsGauge)
}
