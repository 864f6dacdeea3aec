package solver_test

import (
	"math"
	"strings"
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// TestBoundReusesTheLPStartedRepacksLP: on a one-pool input whose pods are all movable, the
// LP-started repack solves the assignment LP over every pod on new nodes, which is the bound's
// LP; the bound takes its duals (no simplex: the lower-bound pass does no LP work and says so)
// and is the bound a fresh solve of its LP gives (the repack moves pods within their pool and
// zone, so the demand after placement is the same).
func TestBoundReusesTheLPStartedRepacksLP(t *testing.T) {
	for _, shape := range []benchdata.Shape{benchdata.EC2Caches, benchdata.EC2Services, benchdata.EC2Batch} {
		in := benchdata.MustInput(shape, 300)
		res := solver.Solve(in)
		var lb *solver.PassReport
		for i := range res.Passes {
			if res.Passes[i].Name == "lower-bound" {
				lb = &res.Passes[i]
			}
		}
		if lb == nil || !lb.Ran {
			t.Fatalf("%s: no lower-bound pass ran: %+v", shape, res.Passes)
		}
		if lb.Work != 0 || !strings.Contains(lb.Note, "not solved again") {
			t.Errorf("%s: lower-bound did %.3g work units, note %q: want the repack's LP reused", shape, lb.Work, lb.Note)
		}
		fresh, reused := solver.FreshLowerBound(in)
		if reused != 0 {
			t.Fatalf("%s: the fresh bound reused %d LPs", shape, reused)
		}
		if math.Abs(fresh-res.LowerBoundPerHour) > 1e-9*fresh {
			t.Errorf("%s: bound %.10f with the repack's duals, %.10f solved afresh", shape, res.LowerBoundPerHour, fresh)
		}
		t.Logf("%s/300: bound %.6f (fresh %.6f)", shape, res.LowerBoundPerHour, fresh)
	}
}
