package solver

import (
	"maps"
	"math"
	"slices"
)

// The assignment bound is the LP relaxation in which whole pods, not loose resources, are
// assigned to fractional nodes of the offerings each pod may use:
//
//	minimise Σ_k price_k·x_k
//	s.t.     Σ_k y_gk = n_g                          for every pod group g
//	         Σ_g d_g[r]·y_gk ≤ alloc_k[r]·x_k         for every offering k and resource r
//	         x, y ≥ 0,  y_gk = 0 unless g may use k
//
// where alloc_k is allocatable less the DaemonSet overhead of a node of that type (and pods is
// one of the resources, so max pods counts). Unlike the resource-by-resource LP it cannot buy one
// family's cpu and another's memory for the same pod, which on catalogs whose families differ in
// shape (c/m/r, burstable types with few pods) is most of its gap. Its dual prices each
// offering's resources separately (v_k ≥ 0, alloc_k·v_k ≤ price_k); any such prices give the
// bound Σ_g n_g·min_{k usable by g} d_g·v_k, which is what is returned: the LP only proposes
// the prices, and they are clipped and scaled into feasibility for every offering (including
// those left out of the LP) before the bound is evaluated, so it is valid whatever the numerics.
//
// The LP is kept small: one column per (pool, type, offering) that is some group's cheapest
// offering of that type, and columns dominated by another (at least as much of every resource
// per dollar, usable by every group that can use them) are left out — a dominated column's
// optimal prices can be copied from its dominator.

type asgGroup struct {
	n    float64
	d    resVec
	c    *class // a class of the group, for its tolerations
	alts []*alt
	zone int
}

type asgCol struct {
	p      *pool
	t      *itype
	offer  int
	price  float64
	usable bitset // over groups
	dom    int    // dominating column, or -1
	v      []float64
}

// assignmentBound returns the bound described above (0 if it cannot be formed). w is the
// resource-by-resource LP's prices, the fallback for offerings no group's LP column covers.
func (s *solver) assignmentBound(w []float64) float64 {
	groups := s.asgGroups()
	if len(groups) == 0 {
		return 0
	}
	rows := demandRows(groups, s.d.n())
	cols, colIdx := s.assignmentColumns(groups, nil)
	if len(cols) == 0 {
		return 0
	}
	kept := pruneDominated(cols, rows)
	lpCols := s.withinBudget(groups, cols, shortlist(groups, cols, kept, rows), rows)
	if len(lpCols) == 0 {
		return 0
	}
	// The LP-started repack has usually solved this very LP already, pool by pool (reusedDuals);
	// its duals are then optimal here too and it is not solved again.
	groupDuals, ok := s.reusedDuals(groups, cols, lpCols)
	switch {
	case ok:
		s.tally.asgReused++
	default:
		if groupDuals, ok = s.solveBlocks(groups, cols, lpCols, rows); ok && !s.wholeLP {
			break
		}
		groupDuals = s.solveAssignment(groups, cols, lpCols, rows).pi[:len(groups)]
	}
	// Columns left out copy their dominator's prices, or else take the LP column's prices that
	// keep them most nearly dual-feasible.
	for _, c := range cols {
		if c.v == nil && c.dom >= 0 {
			d := c
			for d.dom >= 0 && d.v == nil {
				d = cols[d.dom]
			}
			c.v = d.v
		}
	}
	for _, c := range cols {
		if c.v == nil {
			c.v = borrowPrices(c, groups, groupDuals, cols, lpCols, rows)
		}
	}
	return s.evalAssignment(groups, cols, colIdx, w)
}

// solveBlocks solves the bound's LP pool by pool when it is block-diagonal by pool (every
// group's LP columns lie in one pool): each block is an LP of its own, the LP's optimum is the
// sum of theirs and their duals together are optimal for it. A block the LP-started repack has
// solved already (reusedDuals) is not solved again; the others are solved alone, each smaller
// than the whole (the simplex's pivot costs about m², so splitting pays even where nothing is
// reused). It sets the LP columns' resource prices and returns each group's dual; ok is false
// (nothing set) when the LP is not block-diagonal or has one block.
func (s *solver) solveBlocks(groups []*asgGroup, cols []*asgCol, lpCols []int, rows []int) (duals []float64, ok bool) {
	if s.wholeLP {
		return nil, false
	}
	poolOf, ok := groupPools(groups, cols, lpCols)
	if !ok {
		return nil, false
	}
	var order []*pool
	members := map[*pool][]int{}
	for gi, p := range poolOf {
		if p == nil {
			return nil, false
		}
		if members[p] == nil {
			order = append(order, p)
		}
		members[p] = append(members[p], gi)
	}
	if len(order) < 2 {
		return nil, false
	}
	duals = make([]float64, len(groups))
	for _, p := range order {
		gs := members[p]
		local := make([]int, len(groups))
		sub := make([]*asgGroup, len(gs))
		for li, gi := range gs {
			local[gi], sub[li] = li, groups[gi]
		}
		var orig []int
		var bcols []*asgCol
		for _, ci := range lpCols {
			c := cols[ci]
			if c.p != p {
				continue
			}
			bc := *c
			bc.v, bc.dom = nil, -1
			bc.usable = newBitset(len(sub))
			c.usable.each(func(gi int) bool { bc.usable.set(local[gi]); return true })
			orig, bcols = append(orig, ci), append(bcols, &bc)
		}
		all := make([]int, len(bcols))
		for i := range all {
			all[i] = i
		}
		d, reused := s.reusedDuals(sub, bcols, all)
		if reused {
			s.tally.asgBlocksReused++
		} else {
			d = s.solveAssignment(sub, bcols, all, rows).pi[:len(sub)]
			s.tally.asgBlocksSolved++
		}
		for li, gi := range gs {
			duals[gi] = d[li]
		}
		for i, ci := range orig {
			cols[ci].v = bcols[i].v
		}
	}
	s.tally.asgBlocks++
	return duals, true
}

// asgGroups collects the demand placed on new nodes by (usable offerings, request).
func (s *solver) asgGroups() []*asgGroup {
	idx := map[string]*asgGroup{}
	for _, n := range s.open {
		for _, c := range n.cls {
			e := s.effAt(c, len(c.steps))
			zone := -1
			if len(c.volZones) > 0 || e.zoneCons {
				zone = n.zone
			}
			key := asgKey(zone, c.req, e.alts, c)
			g, ok := idx[key]
			if !ok {
				g = &asgGroup{d: c.req, c: c, alts: e.alts, zone: zone}
				idx[key] = g
			}
			g.n++
		}
	}
	// In key order, so that the LP (and the duals the bound reads) do not depend on the order of
	// the plan's nodes: the bound is the same whichever pass computes it.
	out := make([]*asgGroup, 0, len(idx))
	for _, k := range slices.Sorted(maps.Keys(idx)) {
		out = append(out, idx[k])
	}
	return out
}

// asgKey is what tells assignment-LP groups apart: zone (when the pods are held to one), request,
// node-selection alternatives and tolerations (c's).
func asgKey(zone int, req resVec, alts []*alt, c *class) string {
	key := string(rune('A'+zone+1)) + fmtKeyInt(req)
	for _, a := range alts {
		key += a.sig + "||"
	}
	for _, t := range c.tols {
		key += "|" + t.Key + "=" + t.Value + ":" + string(t.Effect) + string(t.Operator)
	}
	return key
}

func fmtKeyInt(v resVec) string {
	buf := make([]byte, 0, 8*len(v))
	for _, x := range v {
		for i := 0; i < 8; i++ {
			buf = append(buf, byte(uint64(x)>>(8*i)))
		}
	}
	return string(buf)
}

// eachUsable calls fn for every (pool, type) a pod of g may use and fits on, with the zone and
// capacity-type masks the pod allows there (in pool only, unless nil).
func (s *solver) eachUsable(g *asgGroup, only *pool, fn func(p *pool, t *itype, zm, cm uint64)) {
	for _, p := range s.pools {
		if only != nil && p != only {
			continue
		}
		if _, bad := untolerated(g.c.tols, p.taints); bad {
			continue
		}
		for _, a := range g.alts {
			if a.conflict != "" {
				continue
			}
			zm, cm := p.zoneMask&a.zoneMask, p.ctMask&a.ctMask
			if g.zone >= 0 {
				zm &= 1 << uint(g.zone)
			}
			s.compat(p, a).each(func(i int) bool {
				if t := p.types[i]; lessEq(g.d, t.alloc) {
					fn(p, t, zm, cm)
				}
				return true
			})
		}
	}
}

// asgSolution is the assignment LP's answer: duals (the first len(groups) are each group's
// price of one more pod), and the primal: nodes bought per kept column and pods of each group
// on each.
type asgSolution struct {
	optimal bool
	pi      []float64
	nodes   []float64         // per kept column
	pods    []map[int]float64 // per kept column: group → pods
}

// solveAssignment solves the LP over the kept columns and stores each kept column's resource
// prices (per milli-unit, before the feasibility scaling).
func (s *solver) solveAssignment(groups []*asgGroup, cols []*asgCol, kept []int, rows []int) asgSolution {
	G, R := len(groups), len(rows)
	// Capacity rows that can never bind are left out (their dual is 0).
	rowOf := make([][]int, len(kept))
	m := G
	for ki, ci := range kept {
		rowOf[ki] = make([]int, R)
		dropped := make([]bool, R)
		for ri := range rows {
			rowOf[ki][ri] = -1
			if dropped[ri] = redundantRow(cols[ci], groups, rows, ri, dropped); !dropped[ri] {
				rowOf[ki][ri] = m
				m++
			}
		}
	}
	scale := make([]float64, R)
	maxPrice := 0.0
	for _, ci := range kept {
		for ri, r := range rows {
			scale[ri] = math.Max(scale[ri], float64(cols[ci].t.alloc[r]))
		}
		maxPrice = math.Max(maxPrice, cols[ci].price)
	}
	for ri := range scale {
		if scale[ri] <= 0 {
			scale[ri] = 1
		}
	}
	b := make([]float64, m)
	var lp []sparseCol
	basis := make([]int, m)
	type ref struct{ k, g int } // kept column, group (-1 for its node count)
	refs := map[int]ref{}
	// The columns' entries live in two shared arrays (each column a capped slice of them), sized
	// for every entry up front: the LP has thousands of small columns.
	nnz := 2 * G
	for _, ci := range kept {
		nnz += 2*R + cols[ci].usable.count()*(1+R)
	}
	rowBuf, valBuf := make([]int32, 0, nnz), make([]float64, 0, nnz)
	col := func(cost float64, start int) sparseCol {
		end := len(rowBuf)
		return sparseCol{cost: cost, rows: rowBuf[start:end:end], vals: valBuf[start:end:end]}
	}
	put := func(row int, v float64) {
		rowBuf, valBuf = append(rowBuf, int32(row)), append(valBuf, v)
	}
	for gi, g := range groups {
		b[gi] = g.n
		basis[gi] = len(lp)
		st := len(rowBuf)
		put(gi, 1)
		lp = append(lp, col(10*maxPrice+1, st)) // artificial
		st = len(rowBuf)
		put(gi, -1)
		lp = append(lp, col(0, st)) // surplus
	}
	var xRows []int32
	var xVals []float64
	for ki, ci := range kept {
		c := cols[ci]
		xRows, xVals = xRows[:0], xVals[:0]
		for ri, r := range rows {
			row := rowOf[ki][ri]
			if row < 0 {
				continue
			}
			basis[row] = len(lp)
			st := len(rowBuf)
			put(row, 1)
			lp = append(lp, col(0, st)) // slack
			if a := float64(c.t.alloc[r]); a > 0 {
				xRows, xVals = append(xRows, int32(row)), append(xVals, -a/scale[ri])
			}
		}
		refs[len(lp)] = ref{ki, -1}
		st := len(rowBuf)
		rowBuf, valBuf = append(rowBuf, xRows...), append(valBuf, xVals...)
		lp = append(lp, col(c.price, st))
		for gi, g := range groups {
			if !c.usable.has(gi) {
				continue
			}
			st := len(rowBuf)
			put(gi, 1)
			for ri, r := range rows {
				if g.d[r] > 0 && rowOf[ki][ri] >= 0 {
					put(rowOf[ki][ri], float64(g.d[r])/scale[ri])
				}
			}
			refs[len(lp)] = ref{ki, gi}
			lp = append(lp, col(0, st))
		}
	}
	// The work budget bounds the pivots (each costs about m² for the basis inverse plus the
	// pricing of every column); the duals of a solve stopped early still give a valid bound
	// (evalAssignment scales them into feasibility) and lpPack rounds what its primal buys.
	perPivot := float64(m*m + len(lp))
	maxIter := 20*m + 200
	if byBudget := int(asgBudget / perPivot); byBudget < maxIter {
		maxIter = max(byBudget, 1)
	}
	binv := make([]float64, m*m)
	for i := 0; i < m; i++ {
		binv[i*m+i] = 1
	}
	pi, x, optimal, iters := revisedSimplexWith(&s.asgSpx, m, b, lp, basis, binv, append([]float64(nil), b...), maxIter)
	s.tally.work += float64(iters) * perPivot
	if !optimal && iters >= maxIter {
		s.tally.asgCut++
	}
	sol := asgSolution{optimal: optimal, pi: pi, nodes: make([]float64, len(kept)), pods: make([]map[int]float64, len(kept))}
	for j, v := range x {
		rf, ok := refs[j]
		if !ok || v <= 0 {
			continue
		}
		if rf.g < 0 {
			sol.nodes[rf.k] = v
			continue
		}
		if sol.pods[rf.k] == nil {
			sol.pods[rf.k] = map[int]float64{}
		}
		sol.pods[rf.k][rf.g] = v
	}
	for ki, ci := range kept {
		v := make([]float64, s.d.n())
		for ri, r := range rows {
			if row := rowOf[ki][ri]; row >= 0 {
				v[r] = math.Max(0, -pi[row]) / scale[ri]
			}
		}
		cols[ci].v = v
	}
	return sol
}

// evalAssignment is Σ_g n_g · min over every offering g may use of d_g·v, with each offering's
// prices scaled into feasibility (alloc·v ≤ price). Offerings without LP prices of their own use
// those of their type's kept column, or else w scaled to the offering.
func (s *solver) evalAssignment(groups []*asgGroup, cols []*asgCol, colIdx colIndex, w []float64) float64 {
	dot := func(a resVec, v []float64) float64 {
		x := 0.0
		for r, q := range a {
			x += float64(q) * v[r]
		}
		return x
	}
	// Each offering's prices (its column's, else its type's first column's, else w) and the
	// value of its capacity at them, once: every group reads them.
	type offerV struct {
		v   []float64
		cap float64
	}
	offV := make([][][]offerV, len(s.pools))
	firstV := make([][][]float64, len(s.pools)) // a type's first column's prices, in column order
	for _, p := range s.pools {
		offV[p.idx] = make([][]offerV, len(p.types))
		firstV[p.idx] = make([][]float64, len(p.types))
	}
	for _, c := range cols {
		if firstV[c.p.idx][c.t.idx] == nil {
			firstV[c.p.idx][c.t.idx] = c.v
		}
	}
	typeV := func(p *pool, t *itype) []offerV {
		if ov := offV[p.idx][t.idx]; ov != nil {
			return ov
		}
		tv := firstV[p.idx][t.idx]
		ov := make([]offerV, len(t.offers))
		for oi := range t.offers {
			v := tv
			if ci, ok := colIdx.get(p, t, oi); ok {
				v = cols[ci].v
			}
			if v == nil {
				v = w
			}
			ov[oi] = offerV{v: v}
			for r, q := range t.alloc {
				ov[oi].cap += float64(max(q, 0)) * v[r]
			}
		}
		offV[p.idx][t.idx] = ov
		return ov
	}
	total := 0.0
	for _, g := range groups {
		best := math.Inf(1)
		s.eachUsable(g, nil, func(p *pool, t *itype, zm, cm uint64) {
			ov := typeV(p, t)
			for oi, o := range t.offers {
				if zm&(1<<uint(o.zone)) == 0 || cm&(1<<uint(o.ct)) == 0 {
					continue
				}
				val := dot(g.d, ov[oi].v)
				if ov[oi].cap > o.price {
					val *= o.price / ov[oi].cap
				}
				best = math.Min(best, val)
			}
		})
		if math.IsInf(best, 1) {
			return 0
		}
		total += g.n * best
	}
	return total
}

// groupPools gives each group the pool of every LP column it may use; ok is false when some
// group's columns span two pools (the LP is not block-diagonal by pool). A group no column may
// use has no pool (nil).
func groupPools(groups []*asgGroup, cols []*asgCol, lpCols []int) (poolOf []*pool, ok bool) {
	poolOf = make([]*pool, len(groups))
	ok = true
	for _, ci := range lpCols {
		c := cols[ci]
		c.usable.each(func(gi int) bool {
			if poolOf[gi] != nil && poolOf[gi] != c.p {
				ok = false
				return false
			}
			poolOf[gi] = c.p
			return true
		})
		if !ok {
			return nil, false
		}
	}
	return poolOf, true
}
