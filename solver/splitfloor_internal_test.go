package solver

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSplitFloorBoundsEveryTwoNodeSplit: splitFloor, which lets the split and rebalance passes
// skip a node or pair no split can make cheaper, is never above the cheapest pair of candidate
// types whose allocatable together holds the pods (enumerated), on random catalogs.
func TestSplitFloorBoundsEveryTwoNodeSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 21))
	tight := 0
	for trial := range 500 {
		p := &pool{}
		var cands []pairCand
		for i := range 2 + rng.IntN(10) {
			alloc := resVec{int64(1 + rng.IntN(16000)), int64(1 + rng.IntN(64000)), int64(rng.IntN(110))}
			p.types = append(p.types, &itype{idx: i, alloc: alloc})
			cands = append(cands, pairCand{i, 0.01 + rng.Float64()})
		}
		used := resVec{int64(rng.IntN(20000)), int64(rng.IntN(80000)), int64(rng.IntN(120))}
		best := math.Inf(1)
		for _, a := range cands {
			for _, b := range cands {
				ok := true
				for r := range used {
					ok = ok && p.types[a.i].alloc[r]+p.types[b.i].alloc[r] >= used[r]
				}
				if ok {
					best = min(best, a.price+b.price)
				}
			}
		}
		floor := splitFloor(used, cands, p)
		if floor > best*(1+1e-12) {
			t.Fatalf("trial %d: floor %.6f above the cheapest two-node split %.6f (used %v)", trial, floor, best, used)
		}
		if best < math.Inf(1) && floor > 0.9*best {
			tight++
		}
	}
	if tight == 0 {
		t.Fatalf("the floor was never within 10%% of the cheapest split: the test proves nothing")
	}
}
