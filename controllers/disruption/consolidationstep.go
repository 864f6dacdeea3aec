package disruption

import (
	"fmt"
	"maps"
	"slices"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// consolidationCandidates are a pass's consolidation candidates, by how a command may take them.
type consolidationCandidates struct {
	// preferred host no pod a command moved; deferred host one (destinations.go).
	preferred, deferred []solver.Candidate
	// held may go in the look-ahead but not in a command now (destinations of commands in flight,
	// back-offs).
	held []solver.Candidate
	// fresh are the replacements commands launched a moment ago (freshReplacements), freshHeld those
	// of them held too: after the other nodes in the look-ahead as in a command, never in the
	// reorder.
	fresh, freshHeld []solver.Candidate
}

// consolidationStep is decide's consolidation path from the candidates to the command, pure: the
// look-ahead, the replace run first, the marks, the candidate lists and the first list's plan.
// decide writes the marks, takes an emptiness command (emptiness), then drift, then consolidation
// (command); the planner-only scale-down replay (scaledownsim_test.go) calls the same two, so it
// cannot drift from the loop.
type consolidationStep struct {
	cin solver.ConsolidationInput // the nodes with this pass's marks
	la  lookAhead
	// reordered is the look-ahead's replace run first (reorderedCommand); noReorder why it is not
	// made now ("" when it is).
	reordered solver.Command
	noReorder string
	// removals are the nodes the commands take first: the look-ahead's removals, with the deletes
	// after the replace run first (less its own nodes) when it runs now. marked are those the pass
	// marks (markable).
	removals, marked map[string]bool
	// allowed are the nodes a command may take now; freshNodes the fresh replacements; secondMoves
	// the nodes whose pods were moved a moment ago (worthASecondMove).
	allowed, freshNodes, secondMoves map[string]bool
	held                             map[string]bool
	tries                            [][]solver.Candidate
	plan                             solver.ConsolidationPlan // of tries[0]
}

// planConsolidationStep plans the step on cin (its nodes marked as the last pass marked them, no
// candidates yet): the look-ahead over every candidate but the fresh replacements (over them too
// when it finds nothing without), the reorder if worth a second move, this pass's marks (none of
// held, none when lift) and the first candidate list's plan on the marked nodes.
func planConsolidationStep(cin solver.ConsolidationInput, cands consolidationCandidates, held map[string]bool, lift bool) consolidationStep {
	minSavings := solver.DefaultMinSavingsFraction
	if cin.MinSavingsFraction != nil {
		minSavings = *cin.MinSavingsFraction
	}
	s := consolidationStep{held: held}
	// The delete-only commands that follow each other; this one is the first (lookahead.go). The
	// fresh replacements stay in it as nodes that stay, unless nothing else can be consolidated.
	cin.Candidates = slices.Concat(cands.preferred, cands.deferred, cands.held)
	s.la = planLookAhead(cin)
	if len(s.la.steps) == 0 && len(cands.fresh)+len(cands.freshHeld) > 0 {
		cin.Candidates = slices.Concat(cands.preferred, cands.deferred, cands.held, cands.fresh, cands.freshHeld)
		s.la = planLookAhead(cin)
	}
	deferred := slices.Concat(cands.deferred, cands.fresh)
	s.allowed, s.freshNodes, s.secondMoves = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, cand := range slices.Concat(cands.preferred, deferred) {
		s.allowed[cand.Node] = true
	}
	// secondMoves are the nodes whose pods a command moved a moment ago: fresh replacements, and the
	// nodes hosting a replica a command moved (deferred). A command taking one must be worth a second
	// move (worthASecondMove).
	for _, cand := range slices.Concat(cands.fresh, cands.freshHeld) {
		s.allowed[cand.Node], s.freshNodes[cand.Node] = false, true
	}
	for _, cand := range deferred {
		s.secondMoves[cand.Node] = true
	}
	// The replace run first moves the pods its node runs now, as any command does: taking a node
	// whose pods were moved a moment ago, it must be worth a second move too (run later, the same
	// replace saves the same and would be refused alike, so "it is replaced later anyway" does not
	// hold for it).
	s.reordered, s.noReorder = reorderedCommand(s.la.first, cin.Nodes, s.allowed, cin.Budgets)
	if s.noReorder == "" && !worthASecondMove(s.reordered, s.secondMoves, s.la.costBefore, minSavings) {
		s.noReorder = fmt.Sprintf("not worth a second move: saves $%.4f/h, under %g of the cluster's $%.4f/h", s.reordered.SavingsPerHour, minSavings, s.la.costBefore)
	}
	// When the look-ahead's replace runs first, the deletes after it are marked too: its
	// replacements are there for their pods, and unmarked the kube-scheduler put the re-created pods
	// on them (session 14's second bench run: 16 repeats from a big node deleted two commands later).
	s.removals = s.la.removals
	if s.noReorder == "" && len(s.la.afterFirst) > 0 {
		s.removals = maps.Clone(s.removals)
		maps.Copy(s.removals, s.la.afterFirst)
		for _, n := range s.la.first.Delete {
			delete(s.removals, n)
		}
	}
	s.marked = markable(s.removals, held, lift)
	cin.Nodes = markRemovalsInSnapshot(cin.Nodes, s.marked)
	s.tries = sliceCandidates(cands.preferred, deferred, s.removals)
	cin.Candidates = nil
	if len(s.tries) > 0 {
		cin.Candidates = s.tries[0]
	}
	s.plan = solver.Consolidate(cin)
	s.cin = cin
	return s
}

// emptiness is the first list's emptiness command, which runs before drift and consolidation.
func (s *consolidationStep) emptiness() (solver.Command, bool) {
	for _, cmd := range s.plan.Commands {
		if cmd.Reason == v1.DisruptionReasonEmpty {
			return cmd, true
		}
	}
	return solver.Command{}, false
}

// consolidationChoice is the consolidation command a pass starts, if any.
type consolidationChoice struct {
	cmd solver.Command
	// ok: start cmd. reordered: it is the look-ahead's replace run first (launched keeping its
	// replacements and its pods as planned). waitForDrain: start none, the node to replace first is
	// the destination of a command still draining.
	ok, reordered, waitForDrain bool
	// list is the candidate list cmd came from.
	list int
	// notes say, for the debug log, which lists gave no command or a refused one.
	notes []listNote
}

// listNote is one candidate list that gave no command, or whose command was not worth a second
// move (refused).
type listNote struct {
	list        int
	candidates  []string
	refused     *solver.Command
	threshold   float64
	costPerHour float64
}

// command is the consolidation command the pass starts: the replace run first; else none while the
// node to replace first waits for a drain (a delete now would move more pods onto it; the hold ends
// 5 s after the drain, and a backed-off node does not wait); else the first command of the
// candidate lists in order (tries) worth a second move.
func (s *consolidationStep) command() consolidationChoice {
	minSavings := solver.DefaultMinSavingsFraction
	if s.cin.MinSavingsFraction != nil {
		minSavings = *s.cin.MinSavingsFraction
	}
	if s.noReorder == "" {
		return consolidationChoice{cmd: s.reordered, ok: true, reordered: true}
	}
	if s.la.first != nil && !slices.ContainsFunc(s.la.first.Delete, func(n string) bool { return s.freshNodes[n] }) && waitsForDrain(s.la.first.Delete, s.allowed, s.held) {
		return consolidationChoice{waitForDrain: true}
	}
	var ch consolidationChoice
	for _, cmd := range s.plan.Commands {
		if cmd.Reason != v1.DisruptionReasonUnderutilized {
			continue
		}
		if worthASecondMove(cmd, s.secondMoves, s.plan.CostBefore, minSavings) {
			ch.cmd, ch.ok = cmd, true
			return ch
		}
		ch.notes = append(ch.notes, listNote{list: 0, refused: &cmd, threshold: minSavings * s.plan.CostBefore})
	}
	if len(s.tries) > 0 && len(s.plan.Commands) == 0 {
		ch.notes = append(ch.notes, listNote{list: 0, candidates: candNames(s.tries[0]), costPerHour: s.plan.CostBefore})
	}
	// The other candidate lists: the nodes hosting pods a command already moved (destinations.go),
	// then the nodes the look-ahead keeps.
	cin := s.cin
	for i := 1; i < len(s.tries); i++ {
		cin.Candidates = s.tries[i]
		plan := solver.Consolidate(cin)
		if len(plan.Commands) == 0 {
			ch.notes = append(ch.notes, listNote{list: i, candidates: candNames(s.tries[i]), costPerHour: plan.CostBefore})
			continue
		}
		cmd := plan.Commands[0]
		if worthASecondMove(cmd, s.secondMoves, plan.CostBefore, minSavings) {
			ch.cmd, ch.ok, ch.list = cmd, true, i
			return ch
		}
		ch.notes = append(ch.notes, listNote{list: i, refused: &cmd, threshold: minSavings * plan.CostBefore})
	}
	return ch
}

// spotRuleRefusal is, for the debug log of a pass that found no command, the command the last
// candidate list (every candidate) would give with the spot-to-spot rule lifted: a spot node
// whose cheaper arrangement is one spot node stays while SpotToSpot is off (the scale-down bench's
// end above the plan, docs/disruption.md "Session 20"), and "no command" alone does not say so.
// ok is false when the rule is on or lifting it changes nothing.
func (s *consolidationStep) spotRuleRefusal() (solver.Command, bool) {
	if s.cin.SpotToSpot || len(s.tries) == 0 {
		return solver.Command{}, false
	}
	cin := s.cin
	cin.SpotToSpot = true
	cin.Candidates = s.tries[len(s.tries)-1]
	for _, cmd := range solver.Consolidate(cin).Commands {
		// Only the shape the rule refuses: a command of another shape was open to this pass too
		// (refused as not worth a second move, or not the best set with the rule on).
		if cmd.Reason == v1.DisruptionReasonUnderutilized && len(cmd.Replacements) == 1 && cmd.Replacements[0].Offering.CapacityType == v1.CapacityTypeSpot {
			return cmd, true
		}
	}
	return solver.Command{}, false
}
