package solver

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/floats"
)

// sparseCol is one column of a linear program in equality form: its cost and its nonzero rows.
type sparseCol struct {
	cost float64
	rows []int32
	vals []float64
}

// revisedSimplex minimises c·x subject to A·x = b, x ≥ 0, starting from the basis whose column
// for row i is basis[i] (that column must be the unit vector e_i, and b ≥ 0, so the start is
// feasible). It keeps the basis inverse explicitly (m×m, product-form updates) and prices the
// sparse columns with Dantzig's rule, switching to Bland's rule after a run of degenerate pivots so
// it cannot cycle. It returns the duals π = c_B·B⁻¹ and the primal x of the last basis (optimal
// unless maxIter was hit) — the assignment bound only uses them as a starting point and checks their feasibility
// itself, so numerical error never makes the bound invalid. gonum's lp.Simplex solves dense
// problems and re-solves the basis at each pivot, which is too slow for the few hundred rows and
// thousands of sparse columns of the assignment LP; its answers cross-check this one in tests.
func revisedSimplex(m int, b []float64, cols []sparseCol, basis []int, maxIter int) (pi, x []float64, optimal bool) {
	binv := make([]float64, m*m)
	for i := 0; i < m; i++ {
		binv[i*m+i] = 1
	}
	pi, x, optimal, _ = revisedSimplexFrom(m, b, cols, basis, binv, append([]float64(nil), b...), maxIter)
	return pi, x, optimal
}

// revisedSimplexFrom is revisedSimplex from a basis whose inverse binv (row-major, m×m) and
// primal values xb = B⁻¹b ≥ 0 the caller supplies (a warm start); basis is updated in place.
// iters is the number of pivots made.
func revisedSimplexFrom(m int, b []float64, cols []sparseCol, basis []int, binv, xb []float64, maxIter int) (pi, x []float64, optimal bool, iters int) {
	return revisedSimplexWith(nil, m, b, cols, basis, binv, xb, maxIter)
}

// simplexScratch holds revisedSimplexWith's working arrays for reuse across solves (the pattern
// LP's dive re-solves dozens of times).
type simplexScratch struct {
	isBasic []bool
	cost    []float64
	start   []int32
	ents    []entry
	alpha   []float64
	nz      []int
	// dj: reduced costs; stamp: the pivot that last priced a column; rowStart, rowCols: the
	// columns with an entry in each row
	dj []float64
	// start4, ents4: the entries padded to a multiple of four per column (the full sweep's)
	start4            []int32
	ents4             []entry
	stamp             []int32
	rowStart, rowCols []int32
	// priced counts the columns priced; alwaysFull prices every column at every pivot (tests
	// compare the two)
	priced     int
	alwaysFull bool
	// copies[j] (nil: none): column j is a copy of an earlier column (the same cost and
	// entries, in the same order). It prices to the same reduced cost as that column, bit for
	// bit: while the first is nonbasic both rules take it before the copy (Dantzig's only
	// replaces the best on a strictly lower cost, Bland's takes the first), and while the first
	// (or another copy) is basic the copy prices to zero up to rounding, far above −eps. So a
	// copy never enters and the sweeps leave it out; the pivots are the same. off[j]: j is basic
	// or a copy (not priced)
	copies, off []bool
}

// transpose lists, per row, the columns with an entry in it (rowCols[rowStart[r]:rowStart[r+1]]),
// in sc's buffers.
func transpose(m int, start []int32, ents []entry, sc *simplexScratch) (rowStart, rowCols []int32) {
	rowStart = slices.Grow(sc.rowStart[:0], m+1)[:m+1]
	clear(rowStart)
	for _, e := range ents {
		rowStart[e.row+1]++
	}
	for r := 0; r < m; r++ {
		rowStart[r+1] += rowStart[r]
	}
	rowCols = slices.Grow(sc.rowCols[:0], len(ents))[:len(ents)]
	next := append([]int32(nil), rowStart[:m]...)
	for j := 0; j+1 < len(start); j++ {
		for _, e := range ents[start[j]:start[j+1]] {
			rowCols[next[e.row]] = int32(j)
			next[e.row]++
		}
	}
	return rowStart, rowCols
}

// revisedSimplexWith is revisedSimplexFrom with its working arrays in sc (nil: allocated).
func revisedSimplexWith(sc *simplexScratch, m int, b []float64, cols []sparseCol, basis []int, binv, xb []float64, maxIter int) (pi, x []float64, optimal bool, iters int) {
	const eps = 1e-9
	if sc == nil {
		sc = &simplexScratch{}
	}
	n := len(cols)
	isBasic := slices.Grow(sc.isBasic[:0], n)[:n]
	clear(isBasic)
	for _, j := range basis {
		isBasic[j] = true
	}
	off := slices.Grow(sc.off[:0], n)[:n]
	copy(off, isBasic)
	if sc.copies != nil {
		for j, c := range sc.copies[:n] {
			off[j] = off[j] || c
		}
	}
	// The pricing loop below scans every column at every pivot; it reads them from one flat
	// copy (costs, and the entries of column j at start[j]:start[j+1]) rather than through each
	// column's two slice headers.
	nnz := 0
	for j := range cols {
		nnz += len(cols[j].rows)
	}
	cost := slices.Grow(sc.cost[:0], n)[:n]
	start := slices.Grow(sc.start[:0], n+1)[:n+1]
	ents := slices.Grow(sc.ents[:0], nnz)
	start[0] = 0
	for j := range cols {
		cost[j] = cols[j].cost
		for t, r := range cols[j].rows {
			ents = append(ents, entry{r, cols[j].vals[t]})
		}
		start[j+1] = int32(len(ents))
	}
	// The full sweep reads the entries again padded to a positive multiple of four per column
	// (padding: row m, whose price is 0, and value 0) so that its inner loop runs four entries
	// at a time, once for most columns: a loop whose trip count varies from column to column
	// mispredicts its exit about once per column. Subtracting 0·0 = +0 leaves every reduced
	// cost as it was, bit for bit.
	start4 := slices.Grow(sc.start4[:0], n+1)[:n+1]
	ents4 := slices.Grow(sc.ents4[:0], nnz+3*n)
	start4[0] = 0
	for j := range cols {
		ents4 = append(ents4, ents[start[j]:start[j+1]]...)
		for len(ents4)%4 != 0 || len(ents4) == int(start4[j]) {
			ents4 = append(ents4, entry{int32(m), 0})
		}
		start4[j+1] = int32(len(ents4))
	}
	alpha := slices.Grow(sc.alpha[:0], m)[:m]
	nz := slices.Grow(sc.nz[:0], m)
	// The reduced costs are kept across pivots: a pivot changes π only on the rows nz of the
	// pivot row, so only the columns with an entry there (and the column that left the basis)
	// are priced again — with the same arithmetic, so every reduced cost is the one pricing
	// from scratch gives. When the pivot row is dense, every column is priced, as before.
	dj := slices.Grow(sc.dj[:0], n)[:n]
	stamp := slices.Grow(sc.stamp[:0], n)[:n]
	clear(stamp)
	var rowStart, rowCols []int32 // the transpose, built the first time it pays
	defer func() {
		sc.isBasic, sc.cost, sc.start, sc.ents, sc.alpha, sc.nz = isBasic, cost, start, ents, alpha, nz
		sc.dj, sc.stamp, sc.off, sc.start4, sc.ents4 = dj, stamp, off, start4, ents4
		if rowCols != nil {
			sc.rowStart, sc.rowCols = rowStart, rowCols
		}
	}()
	price := func(j int) {
		sc.priced++
		d := cost[j]
		for _, e := range ents[start[j]:start[j+1]] {
			d -= pi[e.row] * e.val
		}
		dj[j] = d
	}
	piPad := make([]float64, m+1) // π and the padding's price 0
	pi = piPad[:m]
	degenerate := 0
	recomputeDuals(pi, binv, basis, cols, m)
	// full: price every column; left: the column that left the basis; stale: some reduced costs
	// were not brought up to date
	full, left, stale := true, -1, false
	for iter := 0; iter < maxIter; iter++ {
		if iter%64 == 63 {
			recomputeDuals(pi, binv, basis, cols, m)
			full = true
		}
		if !full && rowCols == nil {
			rowStart, rowCols = transpose(m, start, ents, sc)
		}
		bland := degenerate > 50
		enter, best := -1, -eps
		if full {
			// Every column priced and chosen from in one sweep, as before the reduced costs were
			// kept; a Bland's-rule sweep that stops early leaves the rest stale, so the next
			// pivot prices every column again.
			if bland {
				for j, basic := range off {
					if basic {
						continue
					}
					price(j)
					if dj[j] < -eps {
						enter, best = j, dj[j]
						stale = true
						break
					}
				}
			} else {
				var priced int
				enter, best, priced = dantzigSweep(off, cost, start4, ents4, piPad, dj, best)
				sc.priced += priced
			}
		} else {
			mark := int32(iter + 1)
			for _, k := range nz {
				for _, j := range rowCols[rowStart[k]:rowStart[k+1]] {
					if stamp[j] != mark {
						stamp[j] = mark
						if !off[j] {
							price(int(j))
						}
					}
				}
			}
			if left >= 0 && stamp[left] != mark {
				price(left)
			}
			for j, basic := range off {
				if basic {
					continue
				}
				d := dj[j]
				if d < best*(1+1e-12) || (bland && d < -eps) {
					enter, best = j, d
					if bland {
						break
					}
				}
			}
		}
		if enter < 0 {
			if iter%64 != 0 {
				recomputeDuals(pi, binv, basis, cols, m)
			}
			return pi, primal(xb, basis, len(cols)), true, iter
		}
		// α = B⁻¹ a_enter.
		for i := range alpha {
			alpha[i] = 0
		}
		// (column r of B⁻¹, stride m, scaled and added: per row the same products summed in the
		// same order as a loop over i would, in gonum's vector kernels, which use no fused
		// multiply-add, so the sums are the same bit for bit)
		col := &cols[enter]
		for t, r := range col.rows {
			gonum.Implementation{}.Daxpy(m, col.vals[t], binv[r:], m, alpha, 1)
		}
		leave, ratio := -1, math.Inf(1)
		for i := 0; i < m; i++ {
			if alpha[i] > eps {
				q := xb[i] / alpha[i]
				if q < ratio-1e-12 || (q <= ratio+1e-12 && leave >= 0 && basis[i] < basis[leave]) {
					leave, ratio = i, q
				}
			}
		}
		if leave < 0 {
			return pi, primal(xb, basis, len(cols)), false, iter // unbounded; cannot happen for the covering programs built here
		}
		if ratio < eps {
			degenerate++
		} else {
			degenerate = 0
		}
		// Pivot on (leave, enter), touching only the nonzeros of the pivot row.
		pr := binv[leave*m : leave*m+m]
		ap := alpha[leave]
		nz = nz[:0]
		for i, v := range pr {
			if v != 0 {
				pr[i] = v / ap
				nz = append(nz, i)
			}
		}
		xb[leave] /= ap
		// A pivot row of mostly nonzeros (the pattern LP's are) is applied densely: the zeros
		// subtract ±0, which leaves every entry as it was (at most a zero's sign flips, which
		// nothing reads), and the loop runs without the index list's loads.
		dense := 2*len(nz) > m
		for i := 0; i < m; i++ {
			if i == leave || alpha[i] == 0 {
				continue
			}
			f := alpha[i]
			row := binv[i*m : i*m+m]
			if dense {
				// row += (−f)·pr: (−f)·v is −(f·v) exactly and adding it is subtracting f·v, so
				// this is the scalar loop's arithmetic in gonum's vector kernel
				floats.AddScaled(row, -f, pr)
			} else {
				for _, k := range nz {
					row[k] -= f * pr[k]
				}
			}
			xb[i] -= f * xb[leave]
			if xb[i] < 0 && xb[i] > -1e-9 {
				xb[i] = 0
			}
		}
		// π' = π + d_enter · (row leave of the new B⁻¹).
		for _, k := range nz {
			pi[k] += best * pr[k]
		}
		left = basis[leave]
		isBasic[left] = false
		isBasic[enter] = true
		off[left] = sc.copies != nil && sc.copies[left]
		off[enter] = true
		basis[leave] = enter
		full = 4*len(nz) > m || sc.alwaysFull || stale
		stale = false
	}
	return pi, primal(xb, basis, len(cols)), false, maxIter
}

// dantzigSweep prices every column not off at π (dj[j] = cost[j] − Σ π[row]·val, the entries
// in order; start and ents hold each column's entries padded to a positive multiple of four with
// entries of price 0 and value 0) and returns the first column whose reduced cost is below
// best·(1+1e-12), best updated to each such column's as it goes (Dantzig's rule with ties to the
// lowest index), and the number priced. It is the pricing loop's hot path, kept out of the
// solve's closures. (Pricing two columns side by side to overlap their subtraction chains was
// measured slower: the register pressure spills the loop's state.)
func dantzigSweep(off []bool, cost []float64, start []int32, ents []entry, pi, dj []float64, best float64) (enter int, bestOut float64, priced int) {
	n := len(off)
	cost, dj, start = cost[:n], dj[:n], start[:n+1]
	enter, thr := -1, best*(1+1e-12)
	for j := 0; j < n; j++ {
		if off[j] {
			continue
		}
		d := cost[j]
		for k, hi := start[j], start[j+1]; k < hi; k += 4 {
			e := ents[k : k+4 : k+4]
			d -= pi[e[0].row] * e[0].val
			d -= pi[e[1].row] * e[1].val
			d -= pi[e[2].row] * e[2].val
			d -= pi[e[3].row] * e[3].val
		}
		dj[j] = d
		priced++
		if d < thr {
			enter, best = j, d
			thr = best * (1 + 1e-12)
		}
	}
	return enter, best, priced
}

// entry is one nonzero of a column: its row and value.
type entry struct {
	row int32
	val float64
}

func primal(xb []float64, basis []int, n int) []float64 {
	x := make([]float64, n)
	for i, j := range basis {
		x[j] = math.Max(0, xb[i])
	}
	return x
}

// recomputeDuals sets π = c_B·B⁻¹ afresh (the per-pivot updates drift numerically).
func recomputeDuals(pi, binv []float64, basis []int, cols []sparseCol, m int) {
	for i := range pi {
		pi[i] = 0
	}
	for k := 0; k < m; k++ {
		ck := cols[basis[k]].cost
		if ck == 0 {
			continue
		}
		floats.AddScaled(pi, ck, binv[k*m:k*m+m])
	}
}
