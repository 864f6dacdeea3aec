package disruptionpolicy

import (
	corev1 "k8s.io/api/core/v1"
)

// PlannedRemovalTaintKey marks, with effect NoSchedule, the nodes the disruption loop's look-ahead
// (the budgeted delete-only commands that follow each other) removes but the budget does not let go
// yet. The kube-scheduler does not bind a pod that does not tolerate it there, so a pod evicted by
// the current command is re-created on a node the plan keeps instead of one a later command evicts
// it from again; Joist's solver and provisioner keep off them alike. Until session 16 the effect was
// PreferNoSchedule, which the kube-scheduler's LeastAllocated score outweighed: re-created pods
// landed on marked nodes and were evicted again (the scale-down bench's repeats). A Joist-specific
// taint: Karpenter taints only the nodes of the command it executes (karpenter.sh/disrupted).
const PlannedRemovalTaintKey = "joist.dev/planned-removal"

// PlannedRemovalTaint is the taint on nodes the look-ahead removes later.
var PlannedRemovalTaint = corev1.Taint{Key: PlannedRemovalTaintKey, Effect: corev1.TaintEffectNoSchedule}

// LegacyPlannedRemovalTaint is the mark as releases before session 16 wrote it (PreferNoSchedule):
// taken off wherever it is found, so an upgrade leaves no soft mark behind.
var LegacyPlannedRemovalTaint = corev1.Taint{Key: PlannedRemovalTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}

// HasTaint reports whether the node carries a taint matching t (key and effect).
func HasTaint(n *corev1.Node, t corev1.Taint) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}
