package disruption

import (
	"testing"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/consolidatebench"
)

// BenchmarkLookAhead prices the look-ahead (lookahead.go) on `make bench-consolidation`'s clusters
// with the default budget, 10 % of the nodes: "plan" is what a pass planned before it (one
// solver.Consolidate over every candidate); "lookahead" what it plans now (plannedRemovals, then
// the command from the nodes it removes, on the snapshot with their marks). Both report CPU
// seconds per pass, the nodes the command takes and, for the look-ahead, the nodes it marks.
func BenchmarkLookAhead(b *testing.B) {
	for _, tc := range []struct {
		name    string
		cluster func() solver.ConsolidationInput
	}{{"roundrobin", consolidatebench.RoundRobin}, {"underused", consolidatebench.Underused}, {"full", consolidatebench.Full}} {
		in := tc.cluster()
		tenPercent := (len(in.Nodes)*10 + 99) / 100
		for pool := range in.Budgets {
			budget := solver.DisruptionBudget{}
			for _, r := range disruptionpolicy.Reasons {
				budget[r] = tenPercent
			}
			in.Budgets[pool] = budget
		}
		b.Run(tc.name+"/plan", func(b *testing.B) {
			var plan solver.ConsolidationPlan
			cpu0 := processCPU(b)
			for b.Loop() {
				plan = solver.Consolidate(in)
			}
			b.ReportMetric((processCPU(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(commandNodes(plan)), "nodes-taken")
		})
		b.Run(tc.name+"/lookahead", func(b *testing.B) {
			var (
				plan     solver.ConsolidationPlan
				removals map[string]bool
			)
			cpu0 := processCPU(b)
			for b.Loop() {
				removals = plannedRemovals(in)
				cin := in
				cin.Nodes = markRemovalsInSnapshot(in.Nodes, removals)
				cin.Candidates = sliceCandidates(in.Candidates, nil, removals)[0]
				plan = solver.Consolidate(cin)
			}
			b.ReportMetric((processCPU(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(commandNodes(plan)), "nodes-taken")
			b.ReportMetric(float64(len(removals)), "nodes-marked")
		})
	}
}

// commandNodes counts the nodes the plan's commands take.
func commandNodes(plan solver.ConsolidationPlan) int {
	n := 0
	for _, cmd := range plan.Commands {
		n += len(cmd.Delete)
	}
	return n
}
