package policy

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// Headroom is what the cluster-wide ceilings still allow Joist to launch.
type Headroom struct {
	// Remaining holds, for cpu and memory ceilings some Guardrail sets, the ceiling less what is in
	// use (never negative). Resources without a ceiling are absent: unlimited.
	Remaining corev1.ResourceList
	// NodesRemaining is the node ceiling less nodes in use (never negative); nil when unlimited.
	NodesRemaining *int64
	// Sources names, per limited resource (cpu, memory, nodes), the Guardrail and value that set it,
	// e.g. `Guardrail "platform" clusterLimits.cpu=100`.
	Sources map[corev1.ResourceName]string
}

// ClusterLimitHeadroom computes the headroom left by the clusterLimits of all Guardrails (the lowest
// ceiling of each resource wins). inUse is the summed capacity of all Joist nodes: registered nodes
// and in-flight NodeClaims (use the launched instance type's capacity for claims without a node).
// nodesInUse counts the same nodes and claims. The result does not depend on any Guardrail action:
// the runtime ceiling always applies.
func ClusterLimitHeadroom(guardrails []v1alpha1.Guardrail, inUse corev1.ResourceList, nodesInUse int64) Headroom {
	p := Merge(guardrails)
	h := Headroom{Sources: map[corev1.ResourceName]string{}}
	for _, n := range slices.Sorted(maps.Keys(p.ClusterCeilings)) {
		c := p.ClusterCeilings[n]
		h.Sources[n] = fmt.Sprintf("%s clusterLimits.%s=%s", c.Source, n, c.Value.String())
		if n == ResourceNodes {
			left := max(c.Value.Value()-nodesInUse, 0)
			h.NodesRemaining = &left
			continue
		}
		left := c.Value.DeepCopy()
		if used, ok := inUse[n]; ok {
			left.Sub(used)
		}
		if left.Sign() < 0 {
			left = resource.MustParse("0")
		}
		if h.Remaining == nil {
			h.Remaining = corev1.ResourceList{}
		}
		h.Remaining[n] = left
	}
	return h
}

// Limited reports whether any ceiling applies.
func (h Headroom) Limited() bool { return len(h.Sources) > 0 }

// Fits reports whether one more node with the given capacity stays within every ceiling; when it does
// not, reason names the Guardrail, the limit and the numbers, for a FailedScheduling event.
func (h Headroom) Fits(capacity corev1.ResourceList) (ok bool, reason string) {
	if h.NodesRemaining != nil && *h.NodesRemaining < 1 {
		return false, fmt.Sprintf("cluster-wide node limit reached (%s): no node may be added", h.Sources[ResourceNodes])
	}
	for _, n := range slices.Sorted(maps.Keys(h.Remaining)) {
		left := h.Remaining[n]
		if need, ok := capacity[n]; ok && need.Cmp(left) > 0 {
			return false, fmt.Sprintf("launching a node with %s %s would exceed the cluster-wide limit (%s): %s left", need.String(), n, h.Sources[n], left.String())
		}
	}
	return true, ""
}

// Subtract accounts for a node the caller decided to launch, so that several launches of one batch
// are checked against the same budget.
func (h *Headroom) Subtract(capacity corev1.ResourceList) {
	if h.NodesRemaining != nil {
		left := max(*h.NodesRemaining-1, 0)
		h.NodesRemaining = &left
	}
	for n, left := range h.Remaining {
		if need, ok := capacity[n]; ok {
			left.Sub(need)
			if left.Sign() < 0 {
				left = resource.MustParse("0")
			}
			h.Remaining[n] = left
		}
	}
}
