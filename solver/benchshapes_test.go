package solver_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
	"github.com/joist-dev/joist/solver/verify"
)

// TestBenchmarkShapes runs the verifier on the benchmark shapes' plans (the improvement passes
// move thousands of pods there) and checks the mixed shape's cost against its lower bound.
func TestBenchmarkShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("plan quality at size: make test runs it, make test-unit (-short) does not")
	}
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

// TestBenchmarkShapeShuffled: the repack pass moves most pods of the mixed shape; its plan must
// not depend on input order.
func TestBenchmarkShapeShuffled(t *testing.T) {
	if testing.Short() {
		t.Skip("plan quality at size: make test runs it, make test-unit (-short) does not")
	}
	in := benchdata.MustInput(benchdata.Mixed, 1000)
	want := solver.Solve(in)
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 2; i++ {
		rng.Shuffle(len(in.Pods), func(x, y int) { in.Pods[x], in.Pods[y] = in.Pods[y], in.Pods[x] })
		its := in.NodePools[0].InstanceTypes
		rng.Shuffle(len(its), func(x, y int) { its[x], its[y] = its[y], its[x] })
		got := solver.Solve(in)
		if got.CostPerHour != want.CostPerHour || len(got.NewNodeClaims) != len(want.NewNodeClaims) {
			t.Fatalf("shuffle %d: $%.4f on %d nodes, want $%.4f on %d", i, got.CostPerHour, len(got.NewNodeClaims), want.CostPerHour, len(want.NewNodeClaims))
		}
		for j, w := range want.NewNodeClaims {
			g := got.NewNodeClaims[j]
			if g.InstanceType.Name != w.InstanceType.Name || g.Offering != w.Offering || len(g.Pods) != len(w.Pods) || g.Pods[0].Name != w.Pods[0].Name {
				t.Fatalf("shuffle %d: node %d is %s/%s with %d pods, want %s/%s with %d", i, j,
					g.InstanceType.Name, g.Offering.Zone, len(g.Pods), w.InstanceType.Name, w.Offering.Zone, len(w.Pods))
			}
		}
	}
}
