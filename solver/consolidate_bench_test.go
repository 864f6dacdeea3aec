package solver_test

import (
	"syscall"
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/consolidatebench"
)

// BenchmarkConsolidation plans the benchmark clusters (`make bench-consolidation`):
//   - underused: 1,000 under-used nodes / 10,000 pods. Reports nodes and $/h before and after the
//     plan, after ÷ the LP bound of the same pods placed from scratch, and what a second round on the
//     planned cluster would still save (0 = the plan reached the stable state in one round);
//   - full: 1,000 full nodes; the time to "no command";
//   - roundrobin: issue #21's cluster (1,000 on-demand nodes of 4/8/16 vCPU, 30–40 % used, a
//     400-type catalog). Reports $/h before and after, the from-scratch plan's $/h, and after ÷
//     from-scratch and ÷ the LP bound.
func BenchmarkConsolidation(b *testing.B) {
	b.Run("underused", func(b *testing.B) {
		in := consolidatebench.Underused()
		var plan solver.ConsolidationPlan
		cpu0 := processCPU()
		for b.Loop() {
			plan = solver.Consolidate(in)
		}
		b.ReportMetric((processCPU()-cpu0)/float64(b.N), "cpu-s/op")
		after := applyPlan(in, plan)
		bound := solver.Solve(consolidatebench.AllPods(in)).LowerBoundPerHour
		again := solver.Consolidate(after)
		second := 0.0
		for _, c := range again.Commands {
			second += c.SavingsPerHour
		}
		b.ReportMetric(float64(plan.Search.Solved), "sets-solved")
		b.ReportMetric(float64(len(in.Nodes)), "nodes-before")
		b.ReportMetric(float64(len(after.Nodes)), "nodes-after")
		b.ReportMetric(plan.CostBefore, "$/h-before")
		b.ReportMetric(plan.CostAfter, "$/h-after")
		b.ReportMetric(plan.CostAfter/bound, "after/LP")
		b.ReportMetric(second, "$/h-second-round")
	})
	b.Run("roundrobin", func(b *testing.B) {
		in := consolidatebench.RoundRobin()
		var plan solver.ConsolidationPlan
		cpu0 := processCPU()
		for b.Loop() {
			plan = solver.Consolidate(in)
		}
		b.ReportMetric((processCPU()-cpu0)/float64(b.N), "cpu-s/op")
		scratch := solver.Solve(consolidatebench.AllPods(in))
		after := applyPlan(in, plan)
		b.ReportMetric(float64(plan.Search.Solved), "sets-solved")
		b.ReportMetric(float64(len(in.Nodes)), "nodes-before")
		b.ReportMetric(float64(len(after.Nodes)), "nodes-after")
		b.ReportMetric(plan.CostBefore, "$/h-before")
		b.ReportMetric(plan.CostAfter, "$/h-after")
		b.ReportMetric(scratch.CostPerHour, "$/h-from-scratch")
		b.ReportMetric(plan.CostAfter/scratch.CostPerHour, "after/scratch")
		b.ReportMetric(plan.CostAfter/scratch.LowerBoundPerHour, "after/LP")
	})
	b.Run("full", func(b *testing.B) {
		in := consolidatebench.Full()
		var plan solver.ConsolidationPlan
		cpu0 := processCPU()
		for b.Loop() {
			plan = solver.Consolidate(in)
		}
		b.ReportMetric((processCPU()-cpu0)/float64(b.N), "cpu-s/op")
		b.ReportMetric(float64(len(plan.Commands)), "commands")
	})
}

// processCPU is the process's user+system CPU seconds: steadier than wall time on a shared machine.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
