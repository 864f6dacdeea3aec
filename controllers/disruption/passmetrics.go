package disruption

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/joist-dev/joist/controllers/metrics"
)

// Joist's own series about the loop's cost (Karpenter has no equivalent).
var (
	passDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "joist_disruption_pass_duration_seconds",
		Help:    "Duration of one whole disruption pass: reads, status writes, commands in flight and the decision.",
		Buckets: metrics.DurationBuckets(),
	})
	passPhaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "joist_disruption_pass_phase_duration_seconds",
		Help:    "Duration of one phase of a disruption pass: read (the cache), resume (commands of a previous leader, orphans, expiry), status (observing the claims; only the patches decide reads back are written in the pass, the rest by the status writer), advance (commands in flight, and the re-read after writes), decide (the plan, or the idle memo's skip).",
		Buckets: metrics.DurationBuckets(),
	}, []string{"phase"})
	driftEvaluations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "joist_disruption_drift_evaluations",
		Help: "Drifted nodes in the last pass that evaluated drift, by outcome: evaluated (one replacement solve each, at most the per-pass budget) or deferred to later passes.",
	}, []string{"outcome"})
)

func observePass(clk clock.PassiveClock, start time.Time) {
	passDuration.Observe(clk.Since(start).Seconds())
}

// observePhase records one phase of a pass that began at *since, and moves *since to now.
func observePhase(clk clock.PassiveClock, phase string, since *time.Time) {
	now := clk.Now()
	passPhaseDuration.WithLabelValues(phase).Observe(now.Sub(*since).Seconds())
	*since = now
}

// reportDriftTurn records how many drifted nodes this pass evaluates and how many wait for a later one.
func reportDriftTurn(evaluated, drifted int) {
	driftEvaluations.WithLabelValues("evaluated").Set(float64(evaluated))
	driftEvaluations.WithLabelValues("deferred").Set(float64(drifted - evaluated))
}

func init() {
	crmetrics.Registry.MustRegister(passDuration, passPhaseDuration, driftEvaluations)
}
