package solver

import (
	"math/rand/v2"
	"testing"
)

// warmTestLP is a pattern LP over fixed columns (no pricing: exhaust set, as after the budget),
// rows items, each pattern one to four items with one to six pods of each.
func warmTestLP(rows, pats int, seed uint64) *patternLP {
	rng := rand.New(rand.NewPCG(seed, 1))
	lp := &patternLP{items: make([]*item, rows), need: make([]int, rows), kinds: []patKind{{price: 1}}, exhaust: true}
	for g := range rows {
		lp.need[g] = 3 + rng.IntN(40)
	}
	for g := range rows { // every item coverable alone
		lp.pats = append(lp.pats, newPattern(0, map[int]int{g: 1 + rng.IntN(4)}, 0.5+rng.Float64()))
	}
	for range pats {
		counts := map[int]int{}
		for range 1 + rng.IntN(4) {
			counts[rng.IntN(rows)] = 1 + rng.IntN(6)
		}
		pods := 0
		for _, n := range counts {
			pods += n
		}
		lp.pats = append(lp.pats, newPattern(0, counts, float64(pods)*(0.15+0.1*rng.Float64())))
	}
	return lp
}

// The dive re-solves the LP after each rounding; starting those re-solves from the previous
// basis (crashStart) instead of the artificial one takes far fewer pivots, and the dive still
// covers every pod at about the same cost.
func TestDiveReSolvesStartFromTheLastBasis(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		dive := func(cold bool) (pivots, crashes int, cost float64) {
			lp := warmTestLP(40, 600, seed)
			lp.coldDive = cold
			lp.solve() // the LP before any rounding: the dive's first solve starts from its basis
			first := lp.pivots
			want := append([]int(nil), lp.need...)
			got := make([]int, len(want))
			for _, pt := range lp.dive() {
				cost += pt.price
				for g, n := range pt.counts {
					got[g] += n
				}
			}
			for g := range want {
				if got[g] != want[g] {
					t.Fatalf("seed %d cold=%v: item %d got %d pods, needs %d", seed, cold, g, got[g], want[g])
				}
			}
			return lp.pivots - first, lp.crashStarts, cost
		}
		coldPivots, _, coldCost := dive(true)
		warmPivots, crashes, warmCost := dive(false)
		t.Logf("seed %d: re-solve pivots %d cold, %d from the last basis (%d crash starts); cost %.3f vs %.3f", seed, coldPivots, warmPivots, crashes, coldCost, warmCost)
		if crashes == 0 || 2*warmPivots > coldPivots {
			t.Errorf("seed %d: %d pivots with %d crash starts, %d cold: want at most half the cold ones", seed, warmPivots, crashes, coldPivots)
		}
		if warmCost > 1.02*coldCost {
			t.Errorf("seed %d: dive cost %.3f from the last basis, %.3f cold", seed, warmCost, coldCost)
		}
	}
}
