package disruptionpolicy

import (
	corev1 "k8s.io/api/core/v1"
)

// PlannedRemovalTaintKey marks, with effect PreferNoSchedule, the nodes the disruption loop's
// look-ahead (the budgeted delete-only commands that follow each other) removes but the budget does
// not let go yet. The kube-scheduler scores such a
// node low for a pod that does not tolerate it (TaintToleration), so a pod evicted by the current
// command is re-created on a node the plan keeps instead of one a later command evicts it from
// again; Joist's solver avoids them alike. A Joist-specific taint: Karpenter plans one command at
// a time and has no such mark.
const PlannedRemovalTaintKey = "joist.dev/planned-removal"

// PlannedRemovalTaint is the taint on nodes the look-ahead removes later.
var PlannedRemovalTaint = corev1.Taint{Key: PlannedRemovalTaintKey, Effect: corev1.TaintEffectPreferNoSchedule}

// HasTaint reports whether the node carries a taint matching t (key and effect).
func HasTaint(n *corev1.Node, t corev1.Taint) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}
