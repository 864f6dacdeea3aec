package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReasonProvisioned is karpenter_nodeclaims_created_total's reason for a claim the provisioner launched;
// the disruption loop's replacements carry the disruption reason, lower case, as Karpenter's.
const ReasonProvisioned = "provisioned"

var nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "karpenter_nodeclaims_created_total",
	Help: "Number of nodeclaims created, by reason (provisioned, or the disruption reason for replacements), nodepool and whether minValues was relaxed (never, in Joist).",
}, []string{LabelReason, LabelNodePool, "min_values_relaxed"})

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsCreated)
}

// CountNodeClaimCreated counts a claim launched from pool, for reason.
func CountNodeClaimCreated(pool, reason string) {
	nodeClaimsCreated.WithLabelValues(reason, pool, "false").Inc()
}
