package solver_test

import (
	"testing"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// TestSplitFloorSkipsSplitsThatCannotPay: on mixed/1000 the floor lets the split pass and the
// pair rebalance pass over nodes and pairs whose pods already cost their price at the cheapest
// price per unit of the types a split could use (the plans are the ones trying them gives: plan
// hashes of the 23 quality inputs compared with JOIST_QUALITY=1).
func TestSplitFloorSkipsSplitsThatCannotPay(t *testing.T) {
	splits, pairs, priced := solver.FloorCounts(benchdata.MustInput(benchdata.Mixed, 1000))
	t.Logf("splits floored %d, pairs floored %d of %d priced", splits, pairs, priced)
	if splits == 0 || pairs == 0 {
		t.Fatalf("splits floored %d, pairs floored %d: want both > 0 on mixed/1000", splits, pairs)
	}
}
