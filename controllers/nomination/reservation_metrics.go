package nomination

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/joist-dev/joist/controllers/state"
)

// How well disruption commands' evicted pods land where the plan put them (issue #20). Joist's own:
// Karpenter has no such series.
var (
	plannedReplacements = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "joist_disruption_planned_replacements_total",
		Help: "NodeClaims that executed disruption commands launched as planned replacements.",
	})
	unforeseenLaunches = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "joist_disruption_unforeseen_launches_total",
		Help: "NodeClaims the provisioner launched for pods of workloads a disruption command was moving, beyond its plan.",
	})
	replacementRatio = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "joist_disruption_launched_replacements_ratio",
		Help: "NodeClaims launched because of disruption (planned replacements plus unforeseen launches) divided by planned replacements, since start; 1 is on plan.",
	})
	reservedPods = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "joist_disruption_reserved_pods_total",
		Help: "Pods of drained nodes for whose re-creation a disruption command reserved room on a planned node.",
	})
	reservationsTaken = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "joist_disruption_reservations_taken_total",
		Help: "Re-created pods that took the room a disruption command reserved for them.",
	})
	repeatedEvictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "joist_disruption_repeated_evictions_total",
		Help: "Pods a disruption command evicts that an earlier command already moved (each pod should be evicted at most once).",
	})
	reservationsUnused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "joist_disruption_reservations_unused_total",
		Help: "Reserved slots no re-created pod took before the reservation ended.",
	})
)

// launches holds the two counters' values for the ratio (a Prometheus counter cannot be read back).
var launches struct {
	sync.Mutex
	planned, unforeseen float64
}

// countLaunches adds to the two counters and recomputes the ratio gauge.
func countLaunches(planned, unforeseen int) {
	launches.Lock()
	defer launches.Unlock()
	plannedReplacements.Add(float64(planned))
	unforeseenLaunches.Add(float64(unforeseen))
	launches.planned += float64(planned)
	launches.unforeseen += float64(unforeseen)
	if launches.planned > 0 {
		replacementRatio.Set((launches.planned + launches.unforeseen) / launches.planned)
	}
}

// reservationEnded counts the slots of an ended reservation no pod took.
func reservationEnded(r state.EndedReservation) {
	if r.Slots > r.Taken {
		reservationsUnused.Add(float64(r.Slots - r.Taken))
	}
}

func init() {
	crmetrics.Registry.MustRegister(plannedReplacements, unforeseenLaunches, replacementRatio, reservedPods, reservationsTaken, reservationsUnused, repeatedEvictions)
}
