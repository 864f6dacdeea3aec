package solver

import (
	"math"
	"slices"
)

// Warm starts of the pattern LP's re-solves.
//
// Column generation re-solves the LP for the same need with columns added: the last optimal
// basis is still a feasible basis (warmStart). The dive re-solves it for a smaller need after
// taking whole copies of the patterns it buys: rows whose need reached zero drop out and counts
// above the new need are clipped, so the columns change places and values. The last basis,
// remapped onto the new layout (crashStart), is still primal feasible whenever the dive only took
// the floors of what the LP bought and no column was clipped (the fractional parts then solve the
// residual), and usually close to optimal otherwise; a basis that is singular or infeasible on the
// new need is dropped for the artificial start.

// basisCol names a basic column of the pattern LP: pattern pat (≥ 0), or item's artificial or
// surplus column (pat < 0).
type basisCol struct {
	pat, item int32
	surplus   bool
}

// nameBasis records the basis of the solve just made (its layout: row r's artificial and
// surplus at 2r and 2r+1, then the patterns colPat) as basisCols.
func (lp *patternLP) nameBasis(basis []int, rowOf []int32, colPat []int) {
	m := len(basis)
	itemOf := slices.Grow(lp.sbuf.itemOf[:0], m)[:m]
	for gi, r := range rowOf {
		if r >= 0 {
			itemOf[r] = gi
		}
	}
	names := lp.basisCols[:0]
	for _, j := range basis {
		if j >= 2*m+len(colPat) {
			continue // crashStart's repair column
		}
		if j < 2*m {
			names = append(names, basisCol{pat: -1, item: int32(itemOf[j/2]), surplus: j%2 == 1})
			continue
		}
		names = append(names, basisCol{pat: int32(colPat[j-2*m]), item: -1})
	}
	lp.basisCols = names
	lp.sbuf.itemOf = itemOf
}

// warmStart returns B⁻¹ and B⁻¹b for the last solve's basis when the need is unchanged (so its
// columns keep their places) and the basis is still invertible and feasible; nil otherwise.
func (lp *patternLP) warmStart(b []float64, cols []sparseCol) (binv, xb []float64) {
	m := len(b)
	if len(lp.basis) != m || len(lp.basisNeed) != len(lp.need) {
		return nil, nil
	}
	for i, n := range lp.need {
		if lp.basisNeed[i] != n {
			return nil, nil
		}
	}
	for _, j := range lp.basis {
		if j >= len(cols) {
			return nil, nil
		}
	}
	return lp.invertBasis(lp.basis, b, cols, false)
}

// invertBasis returns B⁻¹ and B⁻¹b for the basis (column indices into cols, one per row), or
// nil when B is singular or (unless anySign) B⁻¹b is not ≥ 0 (up to rounding).
func (lp *patternLP) invertBasis(basis []int, b []float64, cols []sparseCol, anySign bool) (binv, xb []float64) {
	m := len(b)
	B, inv := &lp.sbuf.basisMat, &lp.sbuf.basisInv
	B.Reset()
	B.ReuseAs(m, m)
	inv.Reset()
	for k, j := range basis {
		for t, r := range cols[j].rows {
			B.Set(int(r), k, cols[j].vals[t])
		}
	}
	if err := inv.Inverse(B); err != nil {
		return nil, nil
	}
	binv = slices.Grow(lp.sbuf.binv[:0], m*m)[:m*m]
	xb = slices.Grow(lp.sbuf.xb[:0], m)[:m]
	lp.sbuf.binv, lp.sbuf.xb = binv, xb
	clear(xb)
	for i := 0; i < m; i++ {
		for r := 0; r < m; r++ {
			v := inv.At(i, r)
			binv[i*m+r] = v
			xb[i] += v * b[r]
		}
		if anySign && xb[i] < -1e-7 {
			continue
		}
		if xb[i] < -1e-7 {
			return nil, nil
		}
		xb[i] = math.Max(xb[i], 0)
	}
	lp.work += float64(m * m * m)
	return binv, xb
}

// crashStart maps the last solve's basis (basisCols) onto this solve's layout (rowOf, colPat;
// artificial and surplus of row r at 2r and 2r+1): its pattern columns that are still present
// first, then its surplus and artificial columns of rows still present, each kept when it is
// independent of those kept before it (Gaussian elimination on a dense copy), and the rows left
// without a column completed with their artificial. It returns the basis, B⁻¹ and B⁻¹b, or nil
// when there is no previous basis or it is singular.
//
// When B⁻¹b has negative entries the basis is made feasible with one repair column (the classic
// single-artificial start): fix = −Σ B's columns of the negative rows, so B⁻¹·fix is −1 on those
// rows and 0 elsewhere; it enters, the most negative row leaves, and every row is ≥ 0. Its cost is
// above anything the LP can save with it, so the simplex drives it out; the caller appends fix to
// the columns (at index len(cols)) and re-solves from the artificials if it stays in.
func (lp *patternLP) crashStart(b []float64, cols []sparseCol, rowOf []int32, colPat []int) (basis []int, binv, xb []float64, fix *sparseCol) {
	m := len(b)
	if len(lp.basisCols) == 0 || lp.coldDive {
		return nil, nil, nil, nil
	}
	sb := &lp.sbuf
	patCol := slices.Grow(sb.patCol[:0], len(lp.pats))[:len(lp.pats)]
	for j := range patCol {
		patCol[j] = -1
	}
	for k, j := range colPat {
		patCol[j] = int32(2*m + k)
	}
	sb.patCol = patCol
	cand := sb.cand[:0]
	for pass := 0; pass < 2; pass++ {
		for _, c := range lp.basisCols {
			switch {
			case pass == 0 && c.pat >= 0 && patCol[c.pat] >= 0:
				cand = append(cand, int(patCol[c.pat]))
			case pass == 1 && c.pat < 0 && rowOf[c.item] >= 0:
				j := 2 * int(rowOf[c.item])
				if c.surplus {
					j++
				}
				cand = append(cand, j)
			}
		}
	}
	sb.cand = cand
	// red[k*m:] is the k-th kept column reduced against the ones before it (1 at its pivot row
	// pivRow[k], 0 at theirs).
	red := slices.Grow(sb.red[:0], m*m)[:0]
	pivRow := slices.Grow(sb.pivRow[:0], m)[:0]
	at := make([]int, m) // the column kept for each row, -1 for none yet
	for r := range at {
		at[r] = -1
	}
	v := make([]float64, m)
	for _, j := range cand {
		if len(pivRow) == m {
			break
		}
		clear(v)
		for t, r := range cols[j].rows {
			v[r] = cols[j].vals[t]
		}
		for k, pr := range pivRow {
			if f := v[pr]; f != 0 {
				u := red[k*m : k*m+m]
				for i, x := range u {
					v[i] -= f * x
				}
			}
		}
		best, br := 1e-7, -1
		for r, x := range v {
			if at[r] < 0 && math.Abs(x) > best {
				best, br = math.Abs(x), r
			}
		}
		if br < 0 {
			continue
		}
		f := v[br]
		for i := range v {
			v[i] /= f
		}
		red = append(red, v...)
		pivRow = append(pivRow, br)
		at[br] = j
	}
	sb.red, sb.pivRow = red, pivRow
	lp.work += float64(len(cand) * len(pivRow) * m)
	basis = make([]int, m)
	for r, j := range at {
		if j < 0 {
			j = 2 * r // the row's artificial (e_r), independent of the kept columns
		}
		basis[r] = j
	}
	binv, xb = lp.invertBasis(basis, b, cols, true)
	if binv == nil {
		return nil, nil, nil, nil
	}
	leave := -1
	for i, x := range xb {
		if x < -1e-7 && (leave < 0 || x < xb[leave]) {
			leave = i
		}
	}
	if leave < 0 {
		return basis, binv, xb, nil
	}
	// fix = −Σ_{i: xb_i < 0} a_basis[i], accumulated dense in v.
	clear(v)
	neg := 0
	for i, x := range xb {
		if x < -1e-7 {
			neg++
			c := &cols[basis[i]]
			for t, r := range c.rows {
				v[r] -= c.vals[t]
			}
		} else {
			xb[i] = math.Max(x, 0)
		}
	}
	fix = &sparseCol{}
	scale := 0.0
	for r, x := range v {
		if x != 0 {
			fix.rows = append(fix.rows, int32(r))
			fix.vals = append(fix.vals, x)
			scale += math.Abs(x)
		}
	}
	maxPrice := 0.0
	for _, k := range lp.kinds {
		maxPrice = math.Max(maxPrice, k.price)
	}
	fix.cost = (10*maxPrice + 1) * (1 + scale) * float64(neg)
	// Pivot fix in at row leave: α = B⁻¹·fix is −1 on the negative rows, 0 elsewhere.
	theta := -xb[leave]
	pr := binv[leave*m : leave*m+m]
	for k := range pr {
		pr[k] = -pr[k]
	}
	for i := range xb {
		if i == leave || xb[i] >= -1e-7 {
			continue
		}
		row := binv[i*m : i*m+m]
		for k, p := range pr {
			row[k] += p
		}
		xb[i] = math.Max(xb[i]+theta, 0)
	}
	xb[leave] = theta
	basis[leave] = len(cols)
	return basis, binv, xb, fix
}
