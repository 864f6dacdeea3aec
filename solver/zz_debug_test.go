package solver_test

import (
	"testing"
	"time"

	"github.com/joist-dev/joist/solver"
)

func TestDebugFamilyP(t *testing.T) {
	for _, name := range familyP {
		in, _ := loadFamilyP(t, name)
		t0 := time.Now()
		res := solver.SolveWith(in, solver.Options{Now: time.Now})
		t.Logf("%s %.4f %v", name, res.CostPerHour/res.LowerBoundPerHour, time.Since(t0))
		for _, p := range res.Passes {
			t.Logf("  %-16s ran=%v %8.3f→%8.3f %v work=%.3g %s", p.Name, p.Ran, p.CostBefore, p.CostAfter, p.Duration, p.Work, p.Shortfall)
		}
	}
}
