package solver_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// BenchmarkSolve is Joist's published solver benchmark (numbers in docs/benchmarks.md):
// BenchmarkSolve/<shape>/<pods> for every benchdata shape and size (the realistic EC2-shaped ones
// at benchdata.RealisticSizes). Run it with `make bench`.
// Besides time it reports pods/s, the process CPU time per solve (steadier than wall time on a
// shared machine, though it includes the garbage collector's background work), the plan's node
// count, its $/h, $/h divided by the LP lower bound, and how many pods stayed unschedulable.
func BenchmarkSolve(b *testing.B) {
	type run struct {
		shape benchdata.Shape
		n     int
	}
	var runs []run
	for _, shape := range benchdata.Shapes {
		for _, n := range benchdata.Sizes {
			runs = append(runs, run{shape, n})
		}
	}
	for _, shape := range benchdata.RealisticShapes {
		for _, n := range benchdata.RealisticSizes {
			runs = append(runs, run{shape, n})
		}
	}
	for _, r := range runs {
		shape, n := r.shape, r.n
		b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
			in := benchdata.MustInput(shape, n)
			b.ReportAllocs()
			var res solver.Result
			cpu0 := cpuSeconds()
			for b.Loop() {
				res = solver.Solve(in)
			}
			perOp := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(n)/perOp, "pods/s")
			b.ReportMetric(1000*(cpuSeconds()-cpu0)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(res.NewNodeClaims)), "nodes")
			b.ReportMetric(res.CostPerHour, "$/h")
			if res.LowerBoundPerHour > 0 {
				b.ReportMetric(res.CostPerHour/res.LowerBoundPerHour, "x-lowerbound")
			}
			b.ReportMetric(float64(len(res.Unschedulable)), "unschedulable")
		})
	}
	// The public realistic family p (testdata/realistic-p), loaded through joist simulate, and
	// seeded variants of its kind that were not published (familyp_variants_test.go).
	type named struct {
		name string
		in   func(b *testing.B) solver.Input
	}
	var realistic []named
	for _, name := range familyP {
		realistic = append(realistic, named{"family-p/" + name, func(b *testing.B) solver.Input {
			return loadScenario(b, filepath.Join("testdata", "realistic-p", name))
		}})
	}
	for seed := 1; seed <= variantCount; seed++ {
		realistic = append(realistic, named{fmt.Sprintf("family-p-variant/%d", seed), func(b *testing.B) solver.Input {
			_, in := familyPVariant(b, seed)
			return in
		}})
	}
	for _, r := range realistic {
		b.Run(r.name, func(b *testing.B) {
			in := r.in(b)
			b.ReportAllocs()
			var res solver.Result
			cpu0 := cpuSeconds()
			for b.Loop() {
				res = solver.Solve(in)
			}
			perOp := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(len(in.Pods))/perOp, "pods/s")
			b.ReportMetric(1000*(cpuSeconds()-cpu0)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(res.NewNodeClaims)), "nodes")
			b.ReportMetric(res.CostPerHour, "$/h")
			if res.LowerBoundPerHour > 0 {
				b.ReportMetric(res.CostPerHour/res.LowerBoundPerHour, "x-lowerbound")
			}
			b.ReportMetric(float64(len(res.Unschedulable)), "unschedulable")
		})
	}
}
