package solver_test

import (
	"fmt"
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
	"github.com/joist-dev/joist/solver/verify"
)

// TestBenchmarkShapes runs the verifier on the benchmark shapes' plans (the improvement passes
// move thousands of pods there) and checks the mixed shape's cost against its lower bound.
func TestBenchmarkShapes(t *testing.T) {
	cases := []struct {
		shape    benchdata.Shape
		n        int
		maxRatio float64
	}{
		{benchdata.Diverse, 1000, 1.30},
		{benchdata.Uniform, 1000, 1.02},
		{benchdata.Mixed, 1000, 1.05},
		{benchdata.Mixed, 5000, 1.03},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.shape, tc.n), func(t *testing.T) {
			in := benchdata.MustInput(tc.shape, tc.n)
			res := solver.Solve(in)
			if err := verify.Verify(in, res); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if len(res.Unschedulable) != 0 {
				t.Fatalf("%d pods unschedulable, first: %s", len(res.Unschedulable), res.Unschedulable[0].Reason)
			}
			if r := res.CostPerHour / res.LowerBoundPerHour; r > tc.maxRatio {
				t.Errorf("cost %.3f is %.4f × the lower bound %.3f, want ≤ %.2f", res.CostPerHour, r, res.LowerBoundPerHour, tc.maxRatio)
			}
		})
	}
}
