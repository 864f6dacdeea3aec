package v1

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// NodePoolHashVersion versions the NodePool template hash (annotation NodePoolHashVersionAnnotationKey).
// A NodeClaim stamped with another version is re-stamped, not drifted: the hash's inputs changed,
// not the pool.
const NodePoolHashVersion = "v3"

// Hash is the NodePool template hash that NodeClaims carry in NodePoolHashAnnotationKey: a change of
// it drifts the pool's nodes. It covers what a launched node is made of: template labels,
// annotations, taints, startup taints and the NodeClass reference. Requirements are left out (drift
// checks them against each node's labels instead, so widening them drifts nothing), and so are
// the fields that only govern behaviour: expireAfter, terminationGracePeriod, disruption, limits, weight.
func (in *NodePool) Hash() string {
	t := in.Spec.Template
	h := fnv.New64a()
	// encoding/json sorts map keys, so the encoding is canonical.
	b, _ := json.Marshal(struct {
		Labels        map[string]string   `json:"labels,omitempty"`
		Annotations   map[string]string   `json:"annotations,omitempty"`
		Taints        []corev1.Taint      `json:"taints,omitempty"`
		StartupTaints []corev1.Taint      `json:"startupTaints,omitempty"`
		NodeClassRef  *NodeClassReference `json:"nodeClassRef,omitempty"`
	}{t.Labels, t.Annotations, t.Spec.Taints, t.Spec.StartupTaints, t.Spec.NodeClassRef})
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 10)
}

// Drift reasons on the NodeClaim Drifted condition (the provider adds its own, e.g. ImageDrifted).
const (
	DriftReasonNodePoolDrifted     = "NodePoolDrifted"
	DriftReasonRequirementsDrifted = "RequirementsDrifted"
)

// Disruption condition reasons and event reasons.
const (
	DisruptingReasonEmpty         = "Empty"
	DisruptingReasonUnderutilized = "Underutilized"
	DisruptingReasonDrifted       = "Drifted"
	ConsolidatableReason          = "Consolidatable"
)
