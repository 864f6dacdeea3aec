package metrics

// Label names Karpenter v1.15 gives its series (pkg/metrics/labels.go upstream); Joist's series use the
// same names where they mean the same.
const (
	LabelNodePool            = "nodepool"
	LabelReason              = "reason"
	LabelResourceType        = "resource_type"
	LabelCapacityType        = "capacity_type"
	LabelZone                = "zone"
	LabelController          = "controller"
	LabelConsolidationPolicy = "consolidation_policy"
	LabelTerminationMode     = "termination_mode"
)

// Termination modes of karpenter_nodeclaims_disrupted_total: graceful (no terminationGracePeriod),
// eventual (a positive one), forceful (zero).
const (
	TerminationModeGraceful = "graceful"
	TerminationModeEventual = "eventual"
	TerminationModeForceful = "forceful"
)

// DurationBuckets are Karpenter's buckets for duration histograms (controller-runtime's, extended past
// 60 s). A new slice each call.
func DurationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
		1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600}
}
