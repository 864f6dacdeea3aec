// Package disruptionpolicy is Joist's disruption policy in one pure place, used alike by the disruption
// controller and `joist simulate --consolidate`: the NodePools' disruption budgets, the protections
// that keep a node (karpenter.sh/do-not-disrupt on a pod, Node or NodeClaim, with its duration;
// PodDisruptionBudgets read as the eviction API reads them), which nodes a method may take, what
// disrupting one costs, and the confinement of tenants' pods to their namespace's NodePools. No
// client, no clock (the time is an argument), no I/O: objects in, verdicts out.
package disruptionpolicy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// Reasons are the budgeted disruption reasons, in the order the methods run.
var Reasons = []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}

// AllowedDisruptions is how many more of the pool's nodes may be disrupted now for reason: the most
// restrictive active budget that applies to reason, less the nodes already being disrupted. total
// is the pool's node count and disrupting the nodes being deleted or marked for disruption, both
// counted from the apiserver. An invalid schedule makes its budget block (0): the fail-safe reading.
func AllowedDisruptions(np *v1.NodePool, reason v1.DisruptionReason, total, disrupting int, now time.Time) int {
	allowed := total
	budgets := np.Spec.Disruption.Budgets
	if len(budgets) == 0 {
		budgets = []v1.Budget{{Nodes: "10%"}}
	}
	for _, b := range budgets {
		if len(b.Reasons) > 0 && !hasReason(b.Reasons, reason) {
			continue
		}
		active, err := budgetActive(b, now)
		if err != nil {
			return 0
		}
		if active {
			allowed = min(allowed, budgetNodes(b.Nodes, total))
		}
	}
	return max(0, allowed-disrupting)
}

// budgetActive reports whether b is in force at now: always without a schedule; with one, when a
// cron tick (UTC) happened in the last duration.
func budgetActive(b v1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("budget schedule %q has no duration", *b.Schedule)
	}
	sched, err := cron.ParseStandard(*b.Schedule)
	if err != nil {
		return false, fmt.Errorf("parsing budget schedule %q: %w", *b.Schedule, err)
	}
	now = now.UTC()
	// Next returns the first tick strictly after its argument: a tick in (now-duration, now].
	return !sched.Next(now.Add(-b.Duration.Duration)).After(now), nil
}

func hasReason(reasons []v1.DisruptionReason, r v1.DisruptionReason) bool {
	for _, x := range reasons {
		if x == r {
			return true
		}
	}
	return false
}

// budgetNodes turns "5" or "10%" of total into a node count; a percentage rounds up, so any
// non-zero percentage of a non-empty pool allows at least one node (as Karpenter does).
func budgetNodes(nodes string, total int) int {
	if pct, ok := strings.CutSuffix(nodes, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil {
			return 0
		}
		return (total*p + 99) / 100
	}
	n, err := strconv.Atoi(nodes)
	if err != nil {
		return 0
	}
	return n
}

// PoolCount is a pool's nodes and how many of them are being disrupted.
type PoolCount struct{ Total, Disrupting int }

// PoolBudgets is, for each pool, how many more of its nodes each budgeted reason may disrupt now.
func PoolBudgets(pools map[string]*v1.NodePool, counts map[string]PoolCount, now time.Time) map[string]solver.DisruptionBudget {
	out := make(map[string]solver.DisruptionBudget, len(pools))
	for name, np := range pools {
		c := counts[name]
		b := solver.DisruptionBudget{}
		for _, r := range Reasons {
			b[r] = AllowedDisruptions(np, r, c.Total, c.Disrupting, now)
		}
		out[name] = b
	}
	return out
}
