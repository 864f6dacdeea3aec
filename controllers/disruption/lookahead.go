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
// then removes — every such pod is evicted twice. So the loop first looks ahead: it plans the
// slices that follow each other on the snapshot (each budgeted as now, at least one node per pool,
// applied to the snapshot before the next is planned) for as long as they only delete nodes, and
// marks every node that sequence removes:
//
//   - a command takes only marked nodes (unless no such slice saves anything on its own; then any,
//     as before);
//   - marked nodes carry PlannedRemovalTaint (PreferNoSchedule): the command's own plan avoids them
//     as destinations (the solver honours PreferNoSchedule), and so does the kube-scheduler, which
//     places the evicted pods' re-creations before Joist can nominate them.
//
// Only deletes, because a plan that replaces nodes keeps none of the existing ones to move pods onto:
// the unbudgeted plan of the scale-down bench replaces all 8 nodes by 5 new ones; marking them all
// made every command, avoiding them, launch replacements (measured: 28 launches where none were
// needed). The look-ahead is re-made every pass, so a node it no longer removes loses the taint.

// plannedRemovals returns the nodes the budgeted delete-only commands planned one after the other
// on the snapshot remove.
func plannedRemovals(cin solver.ConsolidationInput) map[string]bool {
	sim := cin
	sim.Budgets = make(map[string]solver.DisruptionBudget, len(cin.Budgets))
	for pool, b := range cin.Budgets {
		slice := solver.DisruptionBudget{}
		for _, r := range disruptionpolicy.Reasons {
			slice[r] = max(b[r], 1)
		}
		sim.Budgets[pool] = slice
	}
	sim.Nodes = slices.Clone(cin.Nodes)
	sim.Candidates = slices.Clone(cin.Candidates)
	out := map[string]bool{}
	for len(sim.Candidates) > 0 {
		plan := solver.Consolidate(sim)
		progressed := false
		for _, cmd := range plan.Commands {
			if len(cmd.Replacements) > 0 || len(cmd.Delete) == 0 {
				continue
			}
			progressed = true
			apply(&sim, cmd)
			for _, n := range cmd.Delete {
				out[n] = true
			}
		}
		if !progressed {
			break
		}
	}
	return out
}

// apply updates the snapshot as if the command had run: its nodes gone, their pods on the nodes its
// placements name.
func apply(sim *solver.ConsolidationInput, cmd solver.Command) {
	gone := map[string]bool{}
	for _, n := range cmd.Delete {
		gone[n] = true
	}
	moved := map[string][]*corev1.Pod{}
	for _, pl := range cmd.Placements {
		moved[pl.Node] = append(moved[pl.Node], pl.Pods...)
	}
	nodes := sim.Nodes[:0:0]
	for _, n := range sim.Nodes {
		if gone[n.Name] {
			continue
		}
		if pods := moved[n.Name]; len(pods) > 0 {
			n.Pods = slices.Concat(n.Pods, pods)
		}
		nodes = append(nodes, n)
	}
	sim.Nodes = nodes
	sim.Candidates = slices.DeleteFunc(slices.Clone(sim.Candidates), func(c solver.Candidate) bool { return gone[c.Node] })
}

// onlyRemovals keeps the candidates the look-ahead removes.
func onlyRemovals(cands []solver.Candidate, removals map[string]bool) []solver.Candidate {
	var out []solver.Candidate
	for _, cand := range cands {
		if removals[cand.Node] {
			out = append(out, cand)
		}
	}
	return out
}

// markRemovalsInSnapshot gives the snapshot's nodes the look-ahead removes PlannedRemovalTaint, as
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

// markPlannedRemovals puts PlannedRemovalTaint on the nodes the look-ahead removes and takes it off
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
// one yields a command: the nodes the look-ahead removes (first without the nodes hosting moved
// replicas, see destinations.go), then — when no slice of the look-ahead saves on its own — every
// candidate, as without the look-ahead.
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
