package v1

import (
	"strconv"
	"time"

	"github.com/mitchellh/hashstructure/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolHashVersion versions the NodePool template hash (annotation NodePoolHashVersionAnnotationKey).
// It is Karpenter v1's version string: Joist's hash is Karpenter's, so claims either one stamped
// with v3 are judged by the other without drifting. A NodeClaim stamped with another version is
// re-stamped, not drifted: the hash's inputs changed, not the pool.
const NodePoolHashVersion = "v3"

// hashOptions are the hashstructure options Karpenter hashes its NodePool template and
// EC2NodeClass with.
func hashOptions() *hashstructure.HashOptions {
	return &hashstructure.HashOptions{SlicesAsSets: true, IgnoreZeroValue: true, ZeroNil: true}
}

// Hash is the NodePool template hash that NodePools and their NodeClaims carry in
// NodePoolHashAnnotationKey: a change of it drifts the pool's nodes. It is the value Karpenter
// v1 computes (hashstructure v2, FormatV2, SlicesAsSets, IgnoreZeroValue, ZeroNil over
// spec.template), bit for bit; bench/upstream checks that on random pools against Karpenter's own
// NodePool.Hash. It covers the template's labels, annotations, taints, startup taints, NodeClass
// reference, expireAfter and terminationGracePeriod. Requirements are left out (drift checks them
// against each node's labels instead, so widening them drifts nothing), and so are the fields
// outside the template that only govern behaviour: disruption, limits, weight.
func (in *NodePool) Hash() string {
	h, err := hashstructure.Hash(templateHashInput(&in.Spec.Template), hashstructure.FormatV2, hashOptions())
	if err != nil {
		panic(err) // plain data (maps, slices, strings, ints) always hashes
	}
	return strconv.FormatUint(h, 10)
}

// templateHashInput converts a template into a mirror of Karpenter's NodeClaimTemplate.
// hashstructure hashes a struct by its type name and its exported fields' names, order and values,
// so Karpenter's value needs Karpenter's shapes: these types are named, ordered and typed as
// sigs.k8s.io/karpenter/pkg/apis/v1's (v1.15) NodeClaimTemplate and what it holds. Fields tagged
// hash:"ignore" upstream are carried with that tag where they decide whether their struct is zero
// (requirements), and left out otherwise (NillableDuration.Raw, set only with the duration).
func templateHashInput(t *NodeClaimTemplate) any {
	type NillableDuration struct {
		*time.Duration
	}
	type NodeClassReference struct {
		Kind  string
		Name  string
		Group string
	}
	type NodeClaimTemplateSpec struct {
		Taints        []corev1.Taint
		StartupTaints []corev1.Taint
		// Not hashed, but its presence makes the spec non-zero, which IgnoreZeroValue reads.
		Requirements           []NodeSelectorRequirementWithMinValues `hash:"ignore"`
		NodeClassRef           *NodeClassReference
		TerminationGracePeriod *metav1.Duration
		ExpireAfter            NillableDuration
	}
	type ObjectMeta struct {
		Labels      map[string]string
		Annotations map[string]string
	}
	type NodeClaimTemplate struct {
		ObjectMeta
		Spec NodeClaimTemplateSpec
	}
	out := NodeClaimTemplate{
		ObjectMeta: ObjectMeta{Labels: t.Labels, Annotations: t.Annotations},
		Spec: NodeClaimTemplateSpec{
			Taints:                 t.Spec.Taints,
			StartupTaints:          t.Spec.StartupTaints,
			Requirements:           t.Spec.Requirements,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod,
			// "Never" is a nil duration upstream, as is an unset one.
			ExpireAfter: NillableDuration{Duration: t.Spec.ExpireAfter.Duration},
		},
	}
	if ref := t.Spec.NodeClassRef; ref != nil {
		out.Spec.NodeClassRef = &NodeClassReference{Kind: ref.Kind, Name: ref.Name, Group: ref.Group}
	}
	return out
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
