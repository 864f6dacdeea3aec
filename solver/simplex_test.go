package solver

import (
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// TestRevisedSimplexMatchesGonum solves random assignment-shaped LPs (cover rows with an
// artificial and a surplus each, capacity rows with a slack each) with revisedSimplex and with
// gonum's dense lp.Simplex and compares the optimum (π·b, by strong duality).
func TestRevisedSimplexMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for trial := 0; trial < 20; trial++ {
		G, K, R := 2+rng.Intn(4), 2+rng.Intn(4), 1+rng.Intn(3)
		m, b, cols, basis := assignmentLP(rng, G, K, R, func(k int) bool { return rng.Intn(4) == 0 && k > 0 })
		pi, _, ok := revisedSimplex(m, b, cols, append([]int(nil), basis...), 10000)
		if !ok {
			t.Fatalf("trial %d: not optimal", trial)
		}
		got := 0.0
		for i := range b {
			got += pi[i] * b[i]
		}
		a := mat.NewDense(m, len(cols), nil)
		c := make([]float64, len(cols))
		for j, col := range cols {
			c[j] = col.cost
			for k, r := range col.rows {
				a.Set(int(r), j, col.vals[k])
			}
		}
		want, _, err := lp.Simplex(c, a, b, 1e-10, nil)
		if err != nil {
			t.Fatalf("trial %d: gonum: %v", trial, err)
		}
		if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
			t.Errorf("trial %d: revisedSimplex optimum %.9f, gonum %.9f", trial, got, want)
		}
	}
}

// TestSimplexRepricesOnlyChangedColumns: a pivot changes the duals only on the rows where the
// pivot row of B⁻¹ is nonzero, so only the columns with an entry there are priced again; the
// solve is bit for bit the one that prices every column at every pivot, with far fewer pricings
// on an assignment-shaped LP (sparse pivot rows).
func TestSimplexRepricesOnlyChangedColumns(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	// a group may use a third of the offerings
	m, b, cols, basis := assignmentLP(rng, 40, 60, 2, func(int) bool { return rng.Intn(3) != 0 })
	solve := func(sc *simplexScratch) (pi, x []float64, iters int) {
		binv := make([]float64, m*m)
		for i := 0; i < m; i++ {
			binv[i*m+i] = 1
		}
		pi, x, ok, iters := revisedSimplexWith(sc, m, b, cols, append([]int(nil), basis...), binv, append([]float64(nil), b...), 10000)
		if !ok {
			t.Fatalf("not optimal after %d pivots", iters)
		}
		return pi, x, iters
	}
	every, changed := &simplexScratch{alwaysFull: true}, &simplexScratch{}
	piE, xE, itE := solve(every)
	piC, xC, itC := solve(changed)
	if itE != itC {
		t.Fatalf("%d pivots pricing every column, %d pricing the changed ones", itE, itC)
	}
	for i := range piE {
		if piE[i] != piC[i] {
			t.Fatalf("dual %d: %v pricing every column, %v pricing the changed ones", i, piE[i], piC[i])
		}
	}
	for j := range xE {
		if xE[j] != xC[j] {
			t.Fatalf("primal %d: %v pricing every column, %v pricing the changed ones", j, xE[j], xC[j])
		}
	}
	if changed.priced*10 > every.priced*7 {
		t.Fatalf("%d column pricings, pricing every column %d: want at least 30 %% fewer", changed.priced, every.priced)
	}
	t.Logf("%d pivots; %d column pricings instead of %d", itC, changed.priced, every.priced)
}

// assignmentLP is a random assignment-shaped LP: G cover rows with an artificial and a surplus
// each, and per offering k R capacity rows with a slack each, its node column, and a column per
// group that may use it (skip(k) says it may not).
func assignmentLP(rng *rand.Rand, G, K, R int, skip func(k int) bool) (m int, b []float64, cols []sparseCol, basis []int) {
	m = G + K*R
	b = make([]float64, m)
	basis = make([]int, m)
	for g := 0; g < G; g++ {
		b[g] = float64(1 + rng.Intn(20))
		basis[g] = len(cols)
		cols = append(cols, sparseCol{cost: 1000, rows: []int32{int32(g)}, vals: []float64{1}})
		cols = append(cols, sparseCol{rows: []int32{int32(g)}, vals: []float64{-1}})
	}
	d := make([][]float64, G)
	for g := range d {
		d[g] = make([]float64, R)
		for r := range d[g] {
			d[g][r] = 0.05 + rng.Float64()*0.3
		}
	}
	for k := 0; k < K; k++ {
		x := sparseCol{cost: 0.5 + rng.Float64()}
		for r := 0; r < R; r++ {
			row := G + k*R + r
			basis[row] = len(cols)
			cols = append(cols, sparseCol{rows: []int32{int32(row)}, vals: []float64{1}})
			x.rows = append(x.rows, int32(row))
			x.vals = append(x.vals, -(0.5 + rng.Float64()))
		}
		cols = append(cols, x)
		for g := 0; g < G; g++ {
			if skip(k) {
				continue
			}
			y := sparseCol{rows: []int32{int32(g)}, vals: []float64{1}}
			for r := 0; r < R; r++ {
				y.rows = append(y.rows, int32(G+k*R+r))
				y.vals = append(y.vals, d[g][r])
			}
			cols = append(cols, y)
		}
	}
	return m, b, cols, basis
}

// TestDantzigSweepMatchesScalarPricing: the full sweep reads each column's entries padded to a
// multiple of four (row m at price 0, value 0); every reduced cost it writes is bit for bit the
// plain loop's over the unpadded entries, and it enters the same column (Dantzig's rule, the
// first of near-ties), on random columns of 0–9 entries with repeated costs and columns off.
func TestDantzigSweepMatchesScalarPricing(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for trial := 0; trial < 200; trial++ {
		m, n := 1+rng.Intn(30), 1+rng.Intn(200)
		pi := make([]float64, m+1)
		for i := range m {
			pi[i] = rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3))
		}
		var start4 []int32
		var ents, ents4 []entry
		start, cost, off := []int32{0}, make([]float64, n), make([]bool, n)
		start4 = append(start4, 0)
		for j := range n {
			cost[j] = float64(rng.Intn(5)) * 0.25
			off[j] = rng.Intn(10) == 0
			for range rng.Intn(10) {
				ents = append(ents, entry{int32(rng.Intn(m)), float64(1 + rng.Intn(40))})
			}
			start = append(start, int32(len(ents)))
			ents4 = append(ents4, ents[start[j]:start[j+1]]...)
			for len(ents4)%4 != 0 || len(ents4) == int(start4[j]) {
				ents4 = append(ents4, entry{int32(m), 0})
			}
			start4 = append(start4, int32(len(ents4)))
		}
		wantDj := make([]float64, n)
		wantEnter, wantBest, wantPriced := -1, -1e-9, 0
		for j := range n {
			if off[j] {
				continue
			}
			d := cost[j]
			for _, e := range ents[start[j]:start[j+1]] {
				d -= pi[e.row] * e.val
			}
			wantDj[j] = d
			wantPriced++
			if d < wantBest*(1+1e-12) {
				wantEnter, wantBest = j, d
			}
		}
		dj := make([]float64, n)
		enter, best, priced := dantzigSweep(off, cost, start4, ents4, pi, dj, -1e-9)
		if enter != wantEnter || best != wantBest || priced != wantPriced {
			t.Fatalf("trial %d: entered %d at %v (%d priced), the plain loop %d at %v (%d)", trial, enter, best, priced, wantEnter, wantBest, wantPriced)
		}
		for j := range n {
			if !off[j] && math.Float64bits(dj[j]) != math.Float64bits(wantDj[j]) {
				t.Fatalf("trial %d: column %d reduced cost %v, the plain loop %v", trial, j, dj[j], wantDj[j])
			}
		}
	}
}
