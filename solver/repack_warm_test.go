package solver

import (
	"math/rand/v2"
	"slices"
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

// Patterns that differ only in counts above the residual need are the same column of the LP;
// the simplex leaves the copies out of its pricing (markCopies) and the dive makes the same
// pivots and buys the same patterns — of the same kinds, though each copy here is of another
// kind at the same price — pricing fewer columns.
func TestCopiedColumnsAreNotPriced(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		dive := func(keep bool) (out []pattern, pivots, priced, copies int) {
			lp := warmTestLP(30, 300, seed)
			lp.kinds = []patKind{{price: 1}, {price: 1}}
			rng := rand.New(rand.NewPCG(seed, 2))
			for j, n := 0, len(lp.pats); j < n; j++ {
				if rng.IntN(3) != 0 {
					continue
				}
				pt := lp.pats[j]
				counts := map[int]int{}
				for g, c := range pt.counts {
					counts[g] = c
				}
				g := pt.keys[rng.IntN(len(pt.keys))]
				counts[g] = max(counts[g], lp.need[g]) + 1 + rng.IntN(20) // the same once clipped where counts[g] ≥ need
				lp.pats = append(lp.pats, newPattern(1, counts, pt.price))
			}
			lp.keepCopies = keep
			out = lp.dive()
			return out, lp.pivots, lp.sbuf.spx.priced, lp.copyCols
		}
		keptOut, keptPivots, keptPriced, _ := dive(true)
		out, pivots, priced, copies := dive(false)
		if len(out) != len(keptOut) {
			t.Fatalf("seed %d: %d patterns bought, %d pricing every copy", seed, len(out), len(keptOut))
		}
		for i := range out {
			if out[i].kind != keptOut[i].kind || !slices.Equal(out[i].keys, keptOut[i].keys) || !slices.Equal(out[i].vals, keptOut[i].vals) {
				t.Fatalf("seed %d: pattern %d is %v of kind %d, %v of kind %d pricing every copy", seed, i, out[i].counts, out[i].kind, keptOut[i].counts, keptOut[i].kind)
			}
		}
		if pivots != keptPivots {
			t.Errorf("seed %d: %d pivots, %d pricing every copy", seed, pivots, keptPivots)
		}
		if copies == 0 || priced >= keptPriced {
			t.Errorf("seed %d: %d copies left out, %d column pricings vs %d pricing every copy", seed, copies, priced, keptPriced)
		}
		if seed == 1 {
			t.Logf("seed %d: %d patterns, %d pivots; %d copies left out; %d column pricings vs %d", seed, len(out), pivots, copies, priced, keptPriced)
		}
	}
}
