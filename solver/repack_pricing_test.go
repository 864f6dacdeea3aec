package solver

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// knapsackCase is one kind of a pattern LP's pricing problem: a node of allocatable alloc and
// price, and items (pod shapes) with their requests, pods left and duals.
type knapsackCase struct {
	alloc resVec
	reqs  []resVec
	need  []int
	pi    []float64
	price float64
}

// lp builds the pattern LP that prices c: one type, one kind every item may use, the round's
// orders by resource already sorted.
func (c knapsackCase) lp() (*patternLP, *patKind, []int) {
	lp := &patternLP{p: &pool{types: []*itype{{alloc: c.alloc}}}, need: c.need}
	for r := range c.alloc {
		lp.rows = append(lp.rows, r)
	}
	k := patKind{price: c.price}
	mask := make([]bool, len(c.reqs))
	for g, q := range c.reqs {
		lp.items = append(lp.items, &item{c: &class{req: q}})
		k.ok, mask[g] = append(k.ok, g), true
	}
	lp.kinds, lp.okMask = []patKind{k}, [][]bool{mask}
	lp.orderByResource(c.pi)
	return lp, &lp.kinds[0], k.ok
}

// bestFill is the knapsack's optimum by enumeration: the most a whole-pod fill is worth.
func (c knapsackCase) bestFill() float64 {
	best := 0.0
	n := make([]int, len(c.reqs))
	var rec func(g int, used resVec, worth float64)
	rec = func(g int, used resVec, worth float64) {
		if g == len(c.reqs) {
			best = math.Max(best, worth)
			return
		}
		u := append(resVec(nil), used...)
		for n[g] = 0; n[g] <= c.need[g]; n[g]++ {
			if n[g] > 0 {
				if !fitsIn(u, c.reqs[g], c.alloc) {
					break
				}
				addTimes(u, c.reqs[g], 1)
			}
			rec(g+1, u, worth+float64(n[g])*c.pi[g])
		}
	}
	rec(0, make(resVec, len(c.alloc)), 0)
	return best
}

// The Lagrangian bound never prunes a kind that could price out: on random small knapsacks it is
// at least the best whole-pod fill (by enumeration) and no looser than the resource-by-resource
// bound it refines; and it is often tighter.
func TestKnapsackBoundHoldsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 11))
	tighter := 0
	const cases = 400
	for i := range cases {
		R, G := 2+rng.IntN(2), 2+rng.IntN(3)
		c := knapsackCase{alloc: make(resVec, R), price: 1}
		for r := range c.alloc {
			c.alloc[r] = 1000 + rng.Int64N(15000)
		}
		for range G {
			q := make(resVec, R)
			for r := range q {
				if rng.IntN(5) > 0 {
					q[r] = 1 + rng.Int64N(c.alloc[r]/2)
				}
			}
			c.reqs = append(c.reqs, q)
			c.need = append(c.need, 1+rng.IntN(6))
			c.pi = append(c.pi, 0.05+rng.Float64())
		}
		lp, k, cands := c.lp()
		wb, ri, ratio := lp.worthBound(k, c.pi, cands)
		lb := lp.knapsackBound(k, c.pi, cands, ri, ratio, math.Inf(-1))
		best := c.bestFill()
		if lb < best*(1-1e-9) {
			t.Fatalf("case %d: Lagrangian bound %.6f below the best fill %.6f (%+v)", i, lb, best, c)
		}
		if lb > wb*(1+1e-9) {
			t.Fatalf("case %d: Lagrangian bound %.6f looser than the resource-by-resource bound %.6f", i, lb, wb)
		}
		if lb < wb*(1-1e-6) {
			tighter++
		}
		// Every fill the pricing heuristics find is worth at most the bound (at a price of zero
		// each fill they try is returned).
		lp.s = &solver{d: &dims{names: make([]corev1.ResourceName, R)}}
		lp.kinds[0].price = 0
		fills, worths, _ := lp.knapsack(&lp.kinds[0], c.pi)
		if len(fills) == 0 {
			t.Fatalf("case %d: no fill at price 0", i)
		}
		for f, w := range worths {
			if w > lb*(1+1e-9) || w > best*(1+1e-9) {
				t.Fatalf("case %d: fill %v worth %.6f, above the bound %.6f or the best fill %.6f", i, fills[f], w, lb, best)
			}
		}
	}
	if tighter < cases/10 {
		t.Errorf("the Lagrangian bound was tighter than the resource-by-resource bound on %d of %d cases", tighter, cases)
	}
	t.Logf("tighter on %d of %d cases", tighter, cases)
}

// A cpu-heavy and a memory-heavy shape that together fill a node: each is worth 16 pods on its
// own resource's bound, but no node holds more than 6.4 of them, so a node priced at 10 cannot
// price out. The resource-by-resource bound (16) cannot tell; the Lagrangian bound prunes the kind
// before any fill is tried.
func TestKnapsackBoundPrunesComplementaryShapes(t *testing.T) {
	c := knapsackCase{
		alloc: resVec{4000, 16000},
		reqs:  []resVec{{1000, 1000}, {250, 4000}},
		need:  []int{100, 100},
		pi:    []float64{1, 1},
		price: 10,
	}
	lp, k, cands := c.lp()
	wb, ri, ratio := lp.worthBound(k, c.pi, cands)
	if wb <= c.price {
		t.Fatalf("resource-by-resource bound %.3f, want above the price %.0f for this case to test anything", wb, c.price)
	}
	if lb := lp.knapsackBound(k, c.pi, cands, ri, ratio, math.Inf(-1)); math.Abs(lb-6.4) > 1e-6 {
		t.Errorf("Lagrangian bound %.6f, want the knapsack's LP optimum 6.4", lb)
	}
	if best := c.bestFill(); best > 6 {
		t.Errorf("best fill %.1f, want at most 6", best)
	}
}

// kinkAt selects the kink a sort reaches the room at, without sorting: equal to sortedKinkAt on
// random kinks with ties (integer weights, so both sums are exact), with room inside, at the
// boundary of and beyond the total.
func TestKinkAtMatchesTheSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 2000 {
		n := rng.IntN(40)
		kinks := make([]kink, n)
		total := 0.0
		for i := range kinks {
			kinks[i] = kink{at: float64(rng.IntN(12)) / 4, a: 1, q: float64(1 + rng.IntN(5)), need: float64(1 + rng.IntN(6))}
			total += kinks[i].need * kinks[i].q
		}
		rooms := []float64{0, float64(rng.IntN(int(total) + 2)), total, total + 1, total / 2}
		for _, room := range rooms {
			want := sortedKinkAt(slices.Clone(kinks), room)
			if got := kinkAt(slices.Clone(kinks), room); got != want {
				t.Fatalf("trial %d, room %v over %v: kinkAt %v, the sort %v", trial, room, kinks, got, want)
			}
		}
	}
}

// TestDominatedKindsShareTheProof: pricing skips a kind whose dominator (every item of it, at
// least its allocatable, at most its price) was proven unable to price out, and adds the very
// patterns, in the same order, that pricing every kind adds.
func TestDominatedKindsShareTheProof(t *testing.T) {
	skipped, pats := 0, 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 9))
		build := func() *patternLP {
			rng := rand.New(rand.NewPCG(seed, 10))
			const items = 8
			lp := &patternLP{s: &solver{d: &dims{names: make([]corev1.ResourceName, 2)}}, p: &pool{}, need: make([]int, items), rows: []int{0, 1}, seen: map[string]bool{}}
			for g := range items {
				lp.items = append(lp.items, &item{c: &class{req: resVec{int64(250 * (1 + rng.IntN(8))), int64(512 * (1 + rng.IntN(16)))}}})
				lp.need[g] = 1 + rng.IntN(30)
			}
			for ti := range 12 {
				size := int64(1 << rng.IntN(5))
				alloc := resVec{2000 * size, 4096 * size * int64(1+rng.IntN(3))}
				lp.p.types = append(lp.p.types, &itype{alloc: alloc})
				price := 0.05 * float64(size) * (1 + rng.Float64())
				// Each type twice: as it is, and dearer with room for fewer items (dominated).
				for _, k := range []patKind{{t: ti, price: price}, {t: ti, price: price * 1.2}} {
					mask := make([]bool, items)
					for g := range items {
						if lessEq(lp.items[g].c.req, alloc) && (k.price == price || rng.IntN(3) > 0) {
							k.ok, mask[g] = append(k.ok, g), true
						}
					}
					k.id = len(lp.kinds)
					lp.kinds, lp.okMask = append(lp.kinds, k), append(lp.okMask, mask)
				}
			}
			return lp
		}
		pi := make([]float64, 8)
		for g := range pi {
			pi[g] = 0.002 + 0.03*rng.Float64()
		}
		every, shared := build(), build()
		shared.dominatedKinds()
		for round := range 3 {
			every.price(pi)
			shared.price(pi)
			for g := range pi {
				pi[g] *= 1.1 + 0.1*float64(round)
			}
		}
		if len(every.pats) != len(shared.pats) {
			t.Fatalf("seed %d: %d patterns pricing every kind, %d sharing the proof", seed, len(every.pats), len(shared.pats))
		}
		for i := range every.pats {
			a, b := every.pats[i], shared.pats[i]
			if a.kind != b.kind || !slices.Equal(a.keys, b.keys) {
				t.Fatalf("seed %d: pattern %d differs: %+v vs %+v", seed, i, a, b)
			}
			for _, g := range a.keys {
				if a.counts[g] != b.counts[g] {
					t.Fatalf("seed %d: pattern %d differs: %+v vs %+v", seed, i, a, b)
				}
			}
		}
		skipped += shared.domSkipped
		pats += len(every.pats)
	}
	if skipped == 0 || pats == 0 {
		t.Fatalf("no knapsack was skipped: the test proves nothing")
	}
	t.Logf("%d knapsacks skipped, %d patterns added over 40 LPs × 3 rounds", skipped, pats)
}

// TestBasicKindsSkipTheBound: a kind with a column in the basis is not given the Lagrangian
// bound (that column is a fill worth its price, so no bound proves it out); the columns column
// generation adds are the same as trying the bound on every kind, on random pattern LPs.
func TestBasicKindsSkipTheBound(t *testing.T) {
	skipped := 0
	for seed := range uint64(40) {
		build := func() *patternLP {
			rng := rand.New(rand.NewPCG(seed, 11))
			const items = 10
			lp := &patternLP{s: &solver{d: &dims{names: make([]corev1.ResourceName, 2)}}, p: &pool{}, need: make([]int, items), rows: []int{0, 1}, seen: map[string]bool{}}
			for g := range items {
				lp.items = append(lp.items, &item{c: &class{req: resVec{int64(250 * (1 + rng.IntN(8))), int64(512 * (1 + rng.IntN(16)))}}})
				lp.need[g] = 1 + rng.IntN(40)
			}
			for ti := range 16 {
				size := int64(1 << rng.IntN(5))
				alloc := resVec{2000 * size, 4096 * size * int64(1+rng.IntN(3))}
				lp.p.types = append(lp.p.types, &itype{alloc: alloc})
				k := patKind{t: ti, price: 0.05 * float64(size) * (1 + rng.Float64()), zone: -1}
				mask := make([]bool, items)
				for g := range items {
					if lessEq(lp.items[g].c.req, alloc) {
						k.ok, mask[g] = append(k.ok, g), true
					}
				}
				if len(k.ok) == 0 {
					continue
				}
				k.id = len(lp.kinds)
				lp.kinds, lp.okMask = append(lp.kinds, k), append(lp.okMask, mask)
			}
			lp.dominatedKinds()
			lp.seedColumns()
			return lp
		}
		all, skip := build(), build()
		all.allBounds = true
		_, xa := all.generate(-1)
		_, xs := skip.generate(-1)
		if len(all.pats) != len(skip.pats) {
			t.Fatalf("seed %d: %d patterns with every bound, %d skipping basic kinds'", seed, len(all.pats), len(skip.pats))
		}
		for i := range all.pats {
			a, b := all.pats[i], skip.pats[i]
			if a.kind != b.kind || !slices.Equal(a.keys, b.keys) || !slices.Equal(a.vals, b.vals) || xa[i] != xs[i] {
				t.Fatalf("seed %d: pattern %d differs: %+v (x %v) vs %+v (x %v)", seed, i, a, xa[i], b, xs[i])
			}
		}
		if all.basicSkipped != 0 {
			t.Fatalf("seed %d: %d bounds skipped with allBounds set", seed, all.basicSkipped)
		}
		skipped += skip.basicSkipped
	}
	if skipped == 0 {
		t.Fatalf("no kind had its bound skipped: the test proves nothing")
	}
	t.Logf("%d bounds not tried on basic kinds", skipped)
}
