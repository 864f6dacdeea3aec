package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
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
//   - marked nodes carry PlannedRemovalTaint (NoSchedule): the command's own plan keeps off them as
//     destinations, and so does the kube-scheduler, which places the evicted pods' re-creations
//     before Joist can nominate them (steer.go says when the marks are left off or lifted).
//
// Only deletes are marked, because a plan that replaces nodes keeps none of the existing ones to
// move pods onto: the unbudgeted plan of the scale-down bench replaces all 8 nodes by 5 new ones;
// marking them all made every command, avoiding them, launch replacements (measured: 28 launches
// where none were needed). The look-ahead is re-made every pass, so a node it no longer removes
// loses the taint.
//
// The sequence goes on through replace steps (their replacements join the simulated cluster). When
// a replace step takes a node earlier steps moved pods onto — the deletes fill the one big node
// kept, which is then over-sized and replaced by smaller ones, evicting all it received — that step
// runs first (reorderedCommand): the same replacements, with the room for the deletes' pods, for
// the same saving. Its re-simulation keeps those replacements (command.keepReplacements).

// maxLookAheadReplaces bounds the replace steps the look-ahead simulates (each one more
// solver.Consolidate on the shrinking cluster).
const maxLookAheadReplaces = 2

// lookAhead is what the sequence of budgeted commands planned on the snapshot shows.
type lookAhead struct {
	// removals are the nodes the sequence's delete-only steps remove (marked, lookahead.go).
	removals map[string]bool
	// first, when set, is a replace step of the sequence that replaces a node an earlier step moved
	// pods onto: the loop runs it first (reorderedCommand), so the pods of the earlier deletes move
	// once, onto its replacements, instead of onto the node and then off it again.
	first *solver.Command
	// afterFirst are the nodes the delete-only steps after first remove (first applied): marked too
	// when first runs now, since its replacements are then there for their pods.
	afterFirst map[string]bool
	// steps describe the simulated sequence, for the log.
	steps []string
	// costBefore is the cluster's $/h the sequence starts from (its first plan's CostBefore).
	costBefore float64
}

// plannedRemovals returns the nodes the budgeted delete-only commands planned one after the other
// on the snapshot remove.
func plannedRemovals(cin solver.ConsolidationInput) map[string]bool {
	return planLookAhead(cin).removals
}

// planLookAhead plans the budgeted commands one after the other on the snapshot (each applied
// before the next is planned), through up to maxLookAheadReplaces replace steps (their replacements
// join the simulated cluster as nodes that stay), and stops at the first replace step after the
// first step: that step is returned as first. Its saving — the node's price less its
// replacements' — does not depend on the pods, so run first it saves the same. When earlier steps
// moved pods onto its node, its replacements are there for those pods instead (the scale-down
// bench's repeats: five deletes onto the one big node kept, then that node replaced by four,
// evicting all it received). When they did not, it commutes with them — but the kube-scheduler,
// not the plan, places the evicted pods' re-creations, and it put them on that node, the emptiest
// unmarked one (bench run 3: 34 repeats from a node the simulated deletes had not filled).
func planLookAhead(cin solver.ConsolidationInput) lookAhead {
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
	original := make(map[string]bool, len(cin.Nodes))
	for _, n := range cin.Nodes {
		original[n.Name] = true
	}
	out := lookAhead{removals: map[string]bool{}}
	received := map[string]bool{}
	replaces := 0
	for step := 0; len(sim.Candidates) > 0 && replaces < maxLookAheadReplaces; step++ {
		plan := solver.Consolidate(sim)
		if step == 0 {
			out.costBefore = plan.CostBefore
		}
		progressed := false
		for _, cmd := range plan.Commands {
			if len(cmd.Delete) == 0 {
				continue
			}
			out.steps = append(out.steps, describeStep(cmd, received))
			if len(cmd.Replacements) > 0 {
				if step > 0 && !slices.ContainsFunc(cmd.Placements, func(pl solver.ExistingPlacement) bool { return !original[pl.Node] }) {
					first := cmd
					out.first = &first
					apply(&sim, cmd, step)
					out.afterFirst = deletesUntilReplace(sim, step+1)
					return out
				}
				replaces++
			} else if replaces == 0 {
				// Marked only before the first replace: a delete after it moves its pods onto
				// the replacements, which a command now does not have (marking those too left
				// a command nowhere to move but onto new nodes, TestWholePlanMarksOnlyWhatTheKeptNodesAbsorb).
				for _, n := range cmd.Delete {
					out.removals[n] = true
				}
			}
			for _, pl := range cmd.Placements {
				if original[pl.Node] && len(pl.Pods) > 0 {
					received[pl.Node] = true
				}
			}
			progressed = true
			apply(&sim, cmd, step)
		}
		if !progressed {
			break
		}
	}
	return out
}

// deletesUntilReplace goes on planning the budgeted steps on sim, from step on, and returns the
// nodes its delete-only steps remove before the first replace step.
func deletesUntilReplace(sim solver.ConsolidationInput, step int) map[string]bool {
	out := map[string]bool{}
	for ; len(sim.Candidates) > 0; step++ {
		progressed := false
		for _, cmd := range solver.Consolidate(sim).Commands {
			if len(cmd.Delete) == 0 {
				continue
			}
			if len(cmd.Replacements) > 0 {
				return out
			}
			for _, n := range cmd.Delete {
				out[n] = true
			}
			progressed = true
			apply(&sim, cmd, step)
		}
		if !progressed {
			break
		}
	}
	return out
}

// apply updates the snapshot as if the command had run: its nodes gone, their pods on the nodes its
// placements name, its replacements up (as nodes that stay, not candidates) with the pods planned
// onto them.
func apply(sim *solver.ConsolidationInput, cmd solver.Command, step int) {
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
	for k, r := range cmd.Replacements {
		nodes = append(nodes, simulatedReplacement(sim.NodePools, r, fmt.Sprintf("lookahead-%d-%d", step, k)))
	}
	sim.Nodes = nodes
	sim.Candidates = slices.DeleteFunc(slices.Clone(sim.Candidates), func(c solver.Candidate) bool { return gone[c.Node] })
}

// simulatedReplacement is a planned replacement as the look-ahead's cluster has it once launched:
// its pool's template taints, the labels its type, offering and single-valued requirements give it,
// the type's allocatable and the pods planned onto it (DaemonSet pods left out: the look-ahead
// slightly overrates its room).
func simulatedReplacement(pools []solver.NodePoolInput, r solver.NodeClaimPlan, name string) solver.ExistingNode {
	labels := map[string]string{}
	for _, req := range r.Requirements {
		if req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
			labels[req.Key] = req.Values[0]
		}
	}
	for k, v := range r.InstanceType.Labels {
		labels[k] = v
	}
	labels[v1.LabelInstanceType], labels[v1.LabelTopologyZone], labels[v1.CapacityTypeLabelKey] = r.InstanceType.Name, r.Offering.Zone, r.Offering.CapacityType
	labels[v1.NodePoolLabelKey], labels[v1.LabelHostname] = r.NodePool, name
	var taints []corev1.Taint
	for _, p := range pools {
		if p.NodePool != nil && p.NodePool.Name == r.NodePool {
			taints = p.NodePool.Spec.Template.Spec.Taints
		}
	}
	return solver.ExistingNode{Name: name, NodeClaim: name, NodePool: r.NodePool, Labels: labels, Taints: taints,
		Allocatable: r.InstanceType.Allocatable(), Pods: slices.Clone(r.Pods)}
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

// markRemovalsInSnapshot gives the snapshot's nodes the look-ahead removes PlannedRemovalTaint, and
// takes it off the others, as the cluster will have them once markPlannedRemovals wrote it: the
// slice planned from it keeps off them as destinations from the first pass on, and uses a node the
// look-ahead no longer removes.
func markRemovalsInSnapshot(nodes []solver.ExistingNode, removals map[string]bool) []solver.ExistingNode {
	out := slices.Clone(nodes)
	isMark := func(t corev1.Taint) bool { return t.Key == disruptionpolicy.PlannedRemovalTaintKey }
	for i := range out {
		has := slices.ContainsFunc(out[i].Taints, func(t corev1.Taint) bool { return t.MatchTaint(&disruptionpolicy.PlannedRemovalTaint) })
		switch {
		case removals[out[i].Name] && !has:
			out[i].Taints = append(slices.DeleteFunc(slices.Clone(out[i].Taints), isMark), disruptionpolicy.PlannedRemovalTaint)
		case !removals[out[i].Name] && slices.ContainsFunc(out[i].Taints, isMark):
			out[i].Taints = slices.DeleteFunc(slices.Clone(out[i].Taints), isMark)
		}
	}
	return out
}

// markPlannedRemovals puts PlannedRemovalTaint on the nodes the look-ahead removes and takes it off
// every other node, and takes the soft mark of earlier releases (LegacyPlannedRemovalTaint) off
// every node. removals are the markable ones.
func (c *Controller) markPlannedRemovals(ctx context.Context, cl *cluster, removals map[string]bool) error {
	var errs []error
	for name, node := range cl.nodes {
		if !node.DeletionTimestamp.IsZero() || disruptionpolicy.HasDisruptedTaint(node) {
			continue // being disrupted: its own taint keeps pods off
		}
		if disruptionpolicy.HasTaint(node, disruptionpolicy.LegacyPlannedRemovalTaint) {
			errs = append(errs, c.setNodeTaint(ctx, name, disruptionpolicy.LegacyPlannedRemovalTaint, false))
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
		// Built once, not by += per candidate (a new string each time: quadratic, 384 of the 626 MB
		// the manager allocated in bench-scale's settle window at 5,000 nodes).
		var b strings.Builder
		for _, cand := range cands {
			b.WriteString(cand.Node)
			b.WriteByte(0)
		}
		key := b.String()
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

// reorderedCommand is the look-ahead's first step (a replace of nodes earlier steps move pods onto)
// as a command now: the same nodes and every one of the step's replacements — sized for the pods
// the earlier deletes will move onto them — with the pods the nodes run now where the step put
// them. A replacement the step gives none of those pods is launched too (session 18): it is fresh
// (freshReplacements), so the next passes move the deletes' pods onto it instead of deleting it.
// Until session 18 it was left out ("empty, the next pass would delete it", written before fresh
// replacements were held); the deletes it was sized for then found no room and the loop ended on
// the big nodes (lead's run L1 of session 17: xxqx9 replaced by 2 of its 3 replacements, hqjvd's 33
// pods had nowhere to go, 1.529 × the plan; 9 of 100 planner-only scale-downs,
// TestScaleDownOnThePlannerEndsNearThePlan). It is not made when a node is not a candidate now or
// the budgets do not allow it; the string says why not ("" when it is made), for the loop's debug
// log.
func reorderedCommand(step *solver.Command, nodes []solver.ExistingNode, allowed map[string]bool, budgets map[string]solver.DisruptionBudget) (solver.Command, string) {
	if step == nil {
		return solver.Command{}, "no replace step in the look-ahead"
	}
	now := map[types.UID]bool{}
	take := map[string]int{}
	for _, name := range step.Delete {
		i := slices.IndexFunc(nodes, func(n solver.ExistingNode) bool { return n.Name == name })
		if !allowed[name] || i < 0 {
			return solver.Command{}, "node " + name + " is not a candidate now"
		}
		take[nodes[i].NodePool]++
		for uid := range podUIDs(nodes[i].Pods) {
			now[uid] = true
		}
	}
	for pool, n := range take {
		if budgets[pool][v1.DisruptionReasonUnderutilized] < n {
			return solver.Command{}, fmt.Sprintf("pool %s's budget allows %d node(s), the step takes %d", pool, budgets[pool][v1.DisruptionReasonUnderutilized], n)
		}
	}
	ours := func(pods []*corev1.Pod) []*corev1.Pod {
		return slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return !now[p.UID] })
	}
	cmd := solver.Command{Reason: v1.DisruptionReasonUnderutilized, Delete: slices.Clone(step.Delete), RemovedPerHour: step.RemovedPerHour,
		SavingsPerHour: step.RemovedPerHour}
	// Every replacement of the step, also one that gets none of the pods the node runs now: it is
	// sized for the pods the deletes before and after the step move (and the step placed there);
	// left out, those deletes found no room and the loop ended on the big nodes (below).
	for _, r := range step.Replacements {
		r.Pods = ours(r.Pods)
		cmd.Replacements = append(cmd.Replacements, r)
		cmd.SavingsPerHour -= r.Offering.Price
	}
	for _, pl := range step.Placements {
		if pods := ours(pl.Pods); len(pods) > 0 {
			cmd.Placements = append(cmd.Placements, solver.ExistingPlacement{Node: pl.Node, Pods: pods})
		}
	}
	if len(cmd.Replacements) == 0 || cmd.SavingsPerHour <= 0 {
		return solver.Command{}, fmt.Sprintf("no replacement or no saving (%d replacements, $%.4f/h)", len(cmd.Replacements), cmd.SavingsPerHour)
	}
	return cmd, ""
}

// waitsForDrain reports whether the nodes of the look-ahead's first step are candidates now but for
// the hold of a command in flight (held: its destinations while it drains), and none is held
// otherwise: the loop then waits for that command rather than planning around the step.
func waitsForDrain(nodes []string, allowed, held map[string]bool) bool {
	waiting := false
	for _, n := range nodes {
		switch {
		case allowed[n]:
		case held[n]:
			waiting = true
		default:
			return false
		}
	}
	return waiting
}

// describeStep is one simulated step for the log: its nodes (* when an earlier step moved pods onto
// it), its replacements and where it moves pods.
func describeStep(cmd solver.Command, received map[string]bool) string {
	var nodes, dests []string
	for _, n := range cmd.Delete {
		if received[n] {
			n += "*"
		}
		nodes = append(nodes, n)
	}
	for _, pl := range cmd.Placements {
		dests = append(dests, fmt.Sprintf("%s:%d", pl.Node, len(pl.Pods)))
	}
	return fmt.Sprintf("%v+%d→%v", nodes, len(cmd.Replacements), dests)
}
