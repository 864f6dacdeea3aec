package solver_test

import (
	"strings"
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// TestTailReportsOneOrder: a plan too large for the tail's second order says so in its pass report
// instead of skipping it silently; a small plan runs both and says nothing.
func TestTailReportsOneOrder(t *testing.T) {
	for _, tc := range []struct {
		shape benchdata.Shape
		pods  int
		note  bool
	}{{"diverse", 1000, true}, {"uniform", 1000, false}} {
		r := solver.Solve(benchdata.MustInput(tc.shape, tc.pods))
		var notes []string
		for _, p := range r.Passes {
			if p.Name == "rebalance+drain" && p.Ran {
				notes = append(notes, p.Note)
			}
		}
		if len(notes) == 0 {
			t.Fatalf("%s/%d: no rebalance+drain pass in %+v", tc.shape, tc.pods, r.Passes)
		}
		got := strings.Contains(notes[len(notes)-1], "one order")
		if got != tc.note {
			t.Fatalf("%s/%d (%d nodes): one-order note %v, want %v: %q", tc.shape, tc.pods, len(r.NewNodeClaims), got, tc.note, notes)
		}
	}
}
