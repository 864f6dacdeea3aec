package disruption

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// The budgets cut a consolidation into slices: with 10 % of 8 nodes, one node at a time. Planned
// slice by slice, command k moves its pods onto the nodes that stay *now*, often one command k+1
// then removes — every such pod is evicted twice. So the loop first plans the whole consolidation
// with no budget (the plan Joist would run if the budgets allowed it) and executes it in slices:
//
//   - a command takes only nodes the whole plan removes (unless no such slice saves anything on its
//     own; then any, as before);
//   - the nodes the whole plan removes later carry PlannedRemovalTaint (PreferNoSchedule): the
//     slice's own plan avoids them as destinations (the solver honours PreferNoSchedule), and so does
//     the kube-scheduler, which places the evicted pods' re-creations before Joist can nominate them.
//
// The whole plan is re-made every pass, so a node it no longer removes loses the taint.

// wholePlanRemovals returns the nodes the consolidation plan removes when no budget limits it.
func wholePlanRemovals(cin solver.ConsolidationInput) map[string]bool {
	whole := cin
	whole.Budgets = make(map[string]solver.DisruptionBudget, len(cin.Budgets))
	for pool := range cin.Budgets {
		unlimited := solver.DisruptionBudget{}
		for _, r := range disruptionpolicy.Reasons {
			unlimited[r] = len(cin.Candidates)
		}
		whole.Budgets[pool] = unlimited
	}
	out := map[string]bool{}
	for _, cmd := range solver.Consolidate(whole).Commands {
		for _, n := range cmd.Delete {
			out[n] = true
		}
	}
	return out
}

// onlyRemovals keeps the candidates the whole plan removes.
func onlyRemovals(cands []solver.Candidate, removals map[string]bool) []solver.Candidate {
	var out []solver.Candidate
	for _, cand := range cands {
		if removals[cand.Node] {
			out = append(out, cand)
		}
	}
	return out
}

// markRemovalsInSnapshot gives the snapshot's nodes the whole plan removes PlannedRemovalTaint, as
// the cluster will have them once markPlannedRemovals wrote it: the slice planned from it avoids
// them as destinations from the first pass on.
func markRemovalsInSnapshot(nodes []solver.ExistingNode, removals map[string]bool) []solver.ExistingNode {
	out := slices.Clone(nodes)
	for i := range out {
		if !removals[out[i].Name] || slices.ContainsFunc(out[i].Taints, func(t corev1.Taint) bool { return t.MatchTaint(&disruptionpolicy.PlannedRemovalTaint) }) {
			continue
		}
		out[i].Taints = append(slices.Clone(out[i].Taints), disruptionpolicy.PlannedRemovalTaint)
	}
	return out
}

// markPlannedRemovals puts PlannedRemovalTaint on the nodes the whole plan removes and takes it off
// every other node.
func (c *Controller) markPlannedRemovals(ctx context.Context, cl *cluster, removals map[string]bool) error {
	var errs []error
	for name, node := range cl.nodes {
		if !node.DeletionTimestamp.IsZero() || disruptionpolicy.HasDisruptedTaint(node) {
			continue // being disrupted: its own taint keeps pods off
		}
		want := removals[name]
		if disruptionpolicy.HasTaint(node, disruptionpolicy.PlannedRemovalTaint) != want {
			errs = append(errs, c.setNodeTaint(ctx, name, disruptionpolicy.PlannedRemovalTaint, want))
		}
	}
	return errors.Join(errs...)
}

// sliceCandidates are the candidate lists the loop plans a budgeted command from, in order, until
// one yields a command: the nodes the whole plan removes (first without the nodes hosting moved
// replicas, see destinations.go), then — when no slice of the whole plan saves on its own — every
// candidate, as before the whole plan.
func sliceCandidates(preferred, deferred []solver.Candidate, removals map[string]bool) [][]solver.Candidate {
	all := append(slices.Clone(preferred), deferred...)
	var out [][]solver.Candidate
	tried := map[string]bool{}
	add := func(cands []solver.Candidate) {
		key := ""
		for _, cand := range cands {
			key += cand.Node + "\x00"
		}
		if len(cands) > 0 && !tried[key] {
			tried[key] = true
			out = append(out, cands)
		}
	}
	if len(removals) > 0 {
		add(onlyRemovals(preferred, removals))
		add(onlyRemovals(all, removals))
	}
	add(preferred)
	add(all)
	return out
}
