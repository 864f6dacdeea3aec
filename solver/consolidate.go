package solver

import (
	"sort"

	v1 "github.com/joist-dev/joist/api/v1"
)

// ConsolidationInput is the cluster snapshot the consolidation planner reads: the existing nodes with
// their bound pods, the pools with what they may launch (Input), which nodes may be disrupted
// (Candidates) and how many more nodes each pool may lose now (Budgets). Input.Pods (pending pods)
// are ignored: the caller does not consolidate while pods are pending.
type ConsolidationInput struct {
	Input
	// Candidates are the nodes the caller found eligible: initialized, not protected, consolidateAfter
	// elapsed. Nodes of Input.Nodes that are not candidates stay and take moved pods.
	Candidates []Candidate
	// Budgets holds, per NodePool name, how many more of its nodes may be disrupted now for each
	// reason. A pool missing here, or a reason missing from its budget, allows none.
	Budgets map[string]DisruptionBudget
	// MinSavingsFraction is the least share of the disrupted nodes' price a repack must save; nil
	// means DefaultMinSavingsFraction, 0 any saving.
	MinSavingsFraction *float64
	// SpotToSpot lets spot nodes be replaced by one spot node (upstream Karpenter's
	// SpotToSpotConsolidation feature gate, off by default there and here): a single node only
	// when at least SpotToSpotMinOptions cheaper instance types could replace it.
	SpotToSpot bool
}

// DisruptionBudget is the number of nodes a pool may still disrupt, per reason.
type DisruptionBudget map[v1.DisruptionReason]int

// Candidate is a node the planner may delete or replace.
type Candidate struct {
	// Node is the ExistingNode's Name.
	Node string
	// DisruptionCost orders candidates among equally useful ones: the caller sums what it costs to
	// disrupt the node (pod count, pod-deletion-cost, priority, age). 0 is cheapest.
	DisruptionCost float64
	// EmptyOnly is set for pools whose consolidationPolicy is WhenEmpty: the node may go only empty.
	EmptyOnly bool
}

// ConsolidationPlan is the planner's answer.
type ConsolidationPlan struct {
	// Commands in the order they should run: the empty nodes first, then the repack.
	Commands []Command
	// CostBefore and CostAfter are the summed $/h of the existing nodes, and after every command
	// (replacements included); nodes whose price is unknown count 0.
	CostBefore, CostAfter float64
	// Kept explains, per candidate that no command disrupts, why it stays.
	Kept []KeptCandidate
	// Search is the work the repack search did.
	Search ConsolidationSearch
}

// ConsolidationSearch counts the candidate sets the repack search looked at: Solved were evaluated
// (placed with Solve, unless the bound alone showed they save too little); Skipped were not, because their price less a lower bound on the new nodes their pods
// need could not beat the best set already solved (so skipping them never changes the plan).
type ConsolidationSearch struct {
	Sets, Solved, Skipped int
}

// Command is one disruption: delete the nodes in Delete after launching Replacements; the pods of
// the deleted nodes go where Placements and the replacements' Pods say.
type Command struct {
	Reason v1.DisruptionReason
	// Delete names the ExistingNodes to remove, cheapest to disrupt first.
	Delete []string
	// Replacements are the nodes to launch (and wait for) before deleting.
	Replacements []NodeClaimPlan
	// Placements are the deleted nodes' pods that move onto nodes that stay.
	Placements []ExistingPlacement
	// RemovedPerHour is the deleted nodes' price; SavingsPerHour that less the replacements' price.
	// SavingsPerHour is > 0 for Underutilized (≥ 0 for Empty: an unpriced empty node still goes).
	RemovedPerHour, SavingsPerHour float64
}

// KeptCandidate is a candidate left alone, and why.
type KeptCandidate struct {
	Node   string
	Reason string
}

// Reasons a candidate is kept.
const (
	KeptNotFound         = "not a node of the snapshot"
	KeptInFlight         = "not launched yet"
	KeptUnpriced         = "its price is unknown, so no saving can be proven"
	KeptWhenEmpty        = "its NodePool's consolidationPolicy is WhenEmpty and it runs pods"
	KeptBudget           = "its NodePool's disruption budget allows no more nodes now"
	KeptNoSaving         = "no cheaper arrangement of its pods was found"
	KeptPodsNotPlaceable = "one of its pods fits nowhere else"
)

// Consolidate plans the whole cluster at once: which candidates to delete or replace so that the
// cluster's $/h drops the most, within each pool's budget, with every pod of a removed node placed
// on the remaining nodes or on cheaper new ones (Solve does the placing). Single-node deletes and
// replacements are the smallest cases of the same search. It is pure and deterministic.
func Consolidate(in ConsolidationInput) ConsolidationPlan {
	p := newPlanner(in)
	var plan ConsolidationPlan
	plan.CostBefore = p.totalPrice()
	if cmd, ok := p.emptyCommand(); ok {
		plan.Commands = append(plan.Commands, cmd)
	}
	cmd, ok, search := p.repackCommand()
	if ok {
		plan.Commands = append(plan.Commands, cmd)
	}
	plan.Search = search
	plan.CostAfter = plan.CostBefore
	for _, c := range plan.Commands {
		plan.CostAfter -= c.SavingsPerHour
	}
	names := make([]string, 0, len(p.kept))
	for n := range p.kept {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		plan.Kept = append(plan.Kept, KeptCandidate{Node: n, Reason: p.kept[n]})
	}
	return plan
}
