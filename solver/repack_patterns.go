package solver

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Pattern packing: the LP relaxation of the whole-node covering problem, solved by column
// generation, and rounded to whole nodes by diving.
//
//	minimise Σ_j price_j·x_j   s.t.  Σ_j a_gj·x_j ≥ n_g for every item g,  x ≥ 0
//
// A column j is a node pattern: one instance type under a zone and capacity-type mask (priced at
// its cheapest offering there) and a whole number a_gj of pods of each item that fits its
// allocatable (DaemonSets and kube overhead already taken off). Items are repack's pods of one
// class (and, for zone-locked pods, one zone); offerings are seen once per distinct mask the items
// ask for, so zones and capacity types nothing tells apart are one column family. Columns start
// as one-item patterns and are generated: for each (type, mask) the pricing problem is a knapsack
// over the items at the LP's duals, solved by greedy fills in several orders; a pattern whose
// price is below its pods' worth joins the LP. Rounding takes whole copies of the patterns the LP
// buys, re-solves the residual (generating again) and, when nothing is bought whole, rounds the
// largest fraction up — the LP's family and size choice carried to whole nodes. What the budget
// leaves is packed by repack's greedy fill.

// patternBudget bounds a pattern pack's column generation (simplex pivots × rows, plus pricing
// steps). Past it, column generation stops and the dive goes on over the columns generated so
// far (diveBudget bounds that). Solve reports how much work each pass did and whether it ran out.
// The LP's rows are distinct pod shapes (shapeRows), so its size follows how varied the pods are,
// not how many: the budget holds on clusters of any size.
const patternBudget = 2e8

// diveBudget bounds the whole pattern pack's work, dive included: past it the dive keeps the
// floors of its last LP and leaves the rest to the greedy packing.
const diveBudget = 3 * patternBudget

// diveRounds: pricing rounds per re-solve of the residual during the dive (the first solve
// generates until no pattern prices out).
const diveRounds = 1

// tailOff, tailOffRounds: column generation stops once tailOffRounds pricing rounds together
// lowered the LP's value by less than tailOff of it (the classic tail-off of column generation:
// the last rounds add many columns for a fraction of a percent).
const (
	tailOff       = 0.002
	tailOffRounds = 2
)

type patKind struct {
	id     int // its index in patternLP.kinds
	t      int
	zm, cm uint64
	zone   int // the zone when zm has one bit, else -1
	price  float64
	ok     []int // items that may use it
}

type pattern struct {
	kind   int
	counts map[int]int
	keys   []int // counts' items, sorted
	vals   []int // counts[keys[i]]: the LP's re-solves read the counts in keys' order
	price  float64
}

func newPattern(kind int, counts map[int]int, price float64) pattern {
	keys := sortedKeys(counts)
	vals := make([]int, len(keys))
	for i, g := range keys {
		vals[i] = counts[g]
	}
	return pattern{kind: kind, counts: counts, keys: keys, vals: vals, price: price}
}

type patternLP struct {
	s     *solver
	p     *pool
	items []*item
	need  []int
	kinds []patKind
	pats  []pattern
	seen  map[string]bool
	work  float64
	rows  []int
	// exhaust: column generation spent patternBudget and stopped; stopped: the dive spent
	// diveBudget and left the rest to the greedy packing.
	exhaust, stopped bool
	// tailedOff: a column generation stopped at its tail-off (generate).
	tailedOff bool
	// okMask[k][g]: item g may use kind k (kinds[k].ok as a mask).
	okMask [][]bool
	// byRes[ri]: for the pricing round under way, the items with pods left and positive dual by
	// worth per unit of resource rows[ri], best first (items needing none of it first, by worth);
	// the order does not depend on the kind, so every kind's pricing filters it instead of sorting.
	byRes [][]int
	// basis is the last solve's optimal basis, for the residual need basisNeed: the next solve
	// for the same need (only columns added) starts from it.
	basis     []int
	basisNeed []int
	// basisCols names the last solve's basic columns independently of that solve's layout, so
	// a re-solve for a smaller need (the dive) can start from them (crashStart).
	basisCols []basisCol
	// pivots, warmStarts, crashStarts: simplex pivots over all solves, and the solves that
	// started from the previous basis as it was (warmStart) and remapped to a new need
	// (crashStart); the rest started from the artificial basis.
	pivots, warmStarts, crashStarts int
	// domRoots[k]: the kinds whose proof that they cannot price out also holds for kind k
	// (dominatedKinds), nil for none; domSkipped counts the knapsacks such a proof saved.
	domRoots   [][]int
	domSkipped int
	pbufPriced []struct {
		fills  []map[int]int
		worths []float64
	}
	pbufProven []bool
	pbufBasic  []bool
	// basicSkipped counts the knapsacks whose Lagrangian bound was not tried because the kind
	// had a basic column; allBounds tries it on every kind (tests compare the two)
	basicSkipped int
	allBounds    bool
	// coldDive: never crashStart (tests compare the re-solves with and without it)
	coldDive bool
	// copyCols counts the columns of each solve that were copies of an earlier one (markCopies),
	// summed over solves; keepCopies prices them all the same (tests compare the two)
	copyCols, solveCols int
	keepCopies          bool
	// sbuf: solve's buffers, reused across solves (nothing outside solve keeps them)
	sbuf struct {
		cols   []sparseCol
		rowBuf []int32
		valBuf []float64
		colPat []int
		rowOf  []int32
		b      []float64
		// warmStart's basis matrix, its inverse, B⁻¹ and B⁻¹b
		basisMat, basisInv mat.Dense
		binv, xb           []float64
		spx                simplexScratch
		// crashStart's buffers: pattern → column, the reduced candidate columns, pivot rows;
		// nameBasis's row → item
		patCol         []int32
		red            []float64
		cand           []int
		pivRow, itemOf []int
		// markCopies' hash of a column → its first column, and the marks
		firstOf map[uint64]int32
		copies  []bool
	}
	// lagY[k*len(rows):]: kind k's resource prices of its last knapsackBound (lagSet[k] once
	// set), the next round's start
	lagY   []float64
	lagSet []bool
	// scratch: the pricing fill under way; kbuf: the pricing's buffers, reused across kinds
	scratch fillCounts
	kbuf    struct {
		cands, ord, bound []int
		key, y, w         []float64
		reqF, remF        []float64
		live              []int
		kinks             []kink
		used              resVec
		// basic: the kind being priced has a column in the basis whose duals are priced at
		// (set by price; knapsackBound cannot prove such a kind out)
		basic bool
	}
	// pbuf: pairFills' buffers; key, inS and counts are indexed by item (inS and counts all
	// false and zero between calls)
	pbuf struct {
		order, S, top, byScore, touched []int
		key                             []float64
		inS                             []bool
		counts                          []int
		used                            resVec
		best                            [][2]int // the best fill so far: item, pods
	}
}

// patternPack opens nodes for repack's items following the rounded pattern LP.
func (s *solver) patternPack(p *pool, order []*item, memo *passMemo) {
	var items []*item
	for _, it := range order {
		if it.left() > 0 {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return
	}
	rows, members := s.shapeRows(p, items)
	lp := s.newPatternLP(p, rows)
	if len(lp.kinds) == 0 {
		return
	}
	lp.seedColumns()
	lp.seedPlan(memo.seeds, items, members)
	chosen := lp.dive()
	memo.patternWork += lp.work
	memo.patternOut = memo.patternOut || lp.exhaust
	s.tally.work += lp.work
	if lp.tailedOff {
		s.tally.patTailed++
	}
	if lp.exhaust {
		s.tally.patCut++
		s.tally.patCols += len(lp.pats)
	}
	if lp.stopped {
		s.tally.patStopped++
		for _, n := range lp.need {
			s.tally.patLeft += n
		}
	}
	compat := make([]bitset, len(items))
	for i, it := range items {
		compat[i] = s.compat(p, s.effAt(it.c, 0).alts[0])
	}
	for _, pt := range chosen {
		k := lp.kinds[pt.kind]
		var sub []*item
		var real []*item
		var subCompat []bitset
		zone := k.zone
		for _, g := range pt.keys {
			want := pt.counts[g]
			for _, ii := range members[g] {
				it := items[ii]
				n := min(want, it.left())
				if n <= 0 {
					continue
				}
				want -= n
				if it.zone >= 0 {
					zone = it.zone
				}
				sub = append(sub, &item{c: it.c, zone: it.zone, pods: it.pods[it.next : it.next+n]})
				real = append(real, it)
				subCompat = append(subCompat, compat[ii])
				if want == 0 {
					break
				}
			}
		}
		if len(sub) == 0 {
			continue
		}
		f := s.simulateFill(p, k.t, sub, subCompat, len(sub), zone)
		if f == nil {
			continue
		}
		if s.commitFill(p, f, sub, zone) == nil {
			continue
		}
		for i, it := range real {
			it.next += f.counts[i]
		}
	}
}

// shapeRows aggregates repack's items into the pattern LP's rows: items whose pods have the same
// request, the same node selection (alternative signature, zone and capacity-type masks) and the
// same zone are one row, since no pattern can tell them apart. The LP's size then follows the
// number of distinct pod shapes, not of deployments. rows[g] stands for the items members[g]
// (its pods are theirs, concatenated; only its count and shape are read).
func (s *solver) shapeRows(p *pool, items []*item) (rows []*item, members [][]int) {
	idx := map[string]int{}
	for ii, it := range items {
		a := s.effAt(it.c, 0).alts[0]
		key := fmt.Sprintf("%v|%s|%x|%x|%d", it.c.req, a.sig, a.zoneMask&p.zoneMask, a.ctMask&p.ctMask, it.zone)
		g, ok := idx[key]
		if !ok {
			g = len(rows)
			idx[key] = g
			rows = append(rows, &item{c: it.c, zone: it.zone})
			members = append(members, nil)
		}
		rows[g].pods = append(rows[g].pods, it.pods[it.next:]...)
		members[g] = append(members[g], ii)
	}
	return rows, members
}

func sortedKeys(m map[int]int) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func (s *solver) newPatternLP(p *pool, items []*item) *patternLP {
	lp := &patternLP{s: s, p: p, items: items, need: make([]int, len(items)), seen: map[string]bool{}}
	type mask struct{ zm, cm uint64 }
	var masks []mask
	seenMask := map[mask]bool{}
	itemMask := make([]mask, len(items))
	for gi, it := range items {
		lp.need[gi] = it.left()
		a := s.effAt(it.c, 0).alts[0]
		zm, cm := p.zoneMask&a.zoneMask, p.ctMask&a.ctMask
		if it.zone >= 0 {
			zm &= 1 << uint(it.zone)
		}
		itemMask[gi] = mask{zm, cm}
		if !seenMask[itemMask[gi]] {
			seenMask[itemMask[gi]] = true
			masks = append(masks, itemMask[gi])
		}
	}
	lp.rows = demandRows(func() []*asgGroup {
		gs := make([]*asgGroup, len(items))
		for i, it := range items {
			gs[i] = &asgGroup{d: it.c.req}
		}
		return gs
	}(), s.d.n())
	compat := make([]bitset, len(items))
	for i, it := range items {
		compat[i] = s.compat(p, s.effAt(it.c, 0).alts[0])
	}
	for _, m := range masks {
		for ti, t := range p.types {
			pr, _ := t.price(m.zm, m.cm)
			if pr <= 0 {
				continue
			}
			k := patKind{t: ti, zm: m.zm, cm: m.cm, zone: -1, price: pr}
			if m.zm != 0 && m.zm&(m.zm-1) == 0 {
				k.zone = trailingZeros(m.zm)
			}
			for gi, it := range items {
				im := itemMask[gi]
				if m.zm&^im.zm == 0 && m.cm&^im.cm == 0 && compat[gi].has(ti) && lessEq(it.c.req, t.alloc) {
					k.ok = append(k.ok, gi)
				}
			}
			if len(k.ok) > 0 {
				k.id = len(lp.kinds)
				lp.kinds = append(lp.kinds, k)
				mask := make([]bool, len(items))
				for _, gi := range k.ok {
					mask[gi] = true
				}
				lp.okMask = append(lp.okMask, mask)
			}
		}
	}
	lp.dominatedKinds()
	return lp
}

func trailingZeros(m uint64) int {
	n := 0
	for m&1 == 0 {
		m >>= 1
		n++
	}
	return n
}

// add records a pattern if it is new.
func (lp *patternLP) add(kind int, counts map[int]int) bool {
	if len(counts) == 0 {
		return false
	}
	pt := newPattern(kind, counts, lp.kinds[kind].price)
	var b strings.Builder
	b.WriteString(strconv.Itoa(kind))
	for _, g := range pt.keys {
		b.WriteByte(';')
		b.WriteString(strconv.Itoa(g))
		b.WriteByte('x')
		b.WriteString(strconv.Itoa(counts[g]))
	}
	key := b.String()
	if lp.seen[key] {
		return false
	}
	lp.seen[key] = true
	lp.pats = append(lp.pats, pt)
	return true
}

// seedColumns adds, for every item, its one-item patterns on the kinds that run it cheapest per
// pod.
func (lp *patternLP) seedColumns() {
	const perItem = 3
	type cand struct {
		kind int
		n    int
		cost float64
	}
	byItem := make([][]cand, len(lp.items))
	empty := lp.s.d.zero()
	for ki, k := range lp.kinds {
		t := lp.p.types[k.t]
		for _, gi := range k.ok {
			n := fitCount(empty, lp.items[gi].c.req, t.alloc, lp.need[gi])
			if n > 0 {
				byItem[gi] = append(byItem[gi], cand{ki, n, k.price / float64(n)})
			}
		}
	}
	for gi, cs := range byItem {
		sort.SliceStable(cs, func(a, b int) bool { return cs[a].cost < cs[b].cost })
		for _, c := range cs[:min(perItem, len(cs))] {
			lp.add(c.kind, map[int]int{gi: c.n})
		}
	}
}

// seedPattern is a node of the plan before repack: its type and movable pods per class.
type seedPattern struct {
	t, zone int
	counts  map[*class]int
}

// seedPlan adds the plan's own node contents as patterns, so the LP starts no worse than the
// plan it is asked to improve; items and members map a class (and zone) to its LP row.
func (lp *patternLP) seedPlan(seeds []seedPattern, items []*item, members [][]int) {
	rowOf := make(map[*item]int, len(items))
	for g, ms := range members {
		for _, ii := range ms {
			rowOf[items[ii]] = g
		}
	}
	for _, sp := range seeds {
		counts := map[int]int{}
		ok := true
		for _, c := range sortedClasses(sp.counts) {
			n := sp.counts[c]
			gi := -1
			for _, it := range items {
				if it.c == c && (it.zone < 0 || it.zone == sp.zone) {
					gi = rowOf[it]
					break
				}
			}
			if gi < 0 {
				ok = false
				break
			}
			counts[gi] = min(counts[gi]+n, lp.need[gi])
		}
		if !ok {
			continue
		}
		best := -1
		for ki, k := range lp.kinds {
			if k.t != sp.t || (best >= 0 && k.price >= lp.kinds[best].price) {
				continue
			}
			all := true
			for gi := range counts {
				all = all && containsInt(k.ok, gi)
			}
			if all {
				best = ki
			}
		}
		if best >= 0 {
			lp.add(best, counts)
		}
	}
}

// sortedClasses lists m's classes in a fixed order (by key).
func sortedClasses(m map[*class]int) []*class {
	out := make([]*class, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].key < out[b].key })
	return out
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// solve solves the LP over the current patterns for the residual need (rows only for items
// with pods left; counts above the residual need clipped); it returns the duals per item and x
// per pattern.
func (lp *patternLP) solve() (pi, x []float64) {
	sb := &lp.sbuf
	rowOf := slices.Grow(sb.rowOf[:0], len(lp.items))[:len(lp.items)]
	b := sb.b[:0]
	defer func() { sb.rowOf, sb.b = rowOf, b }()
	for gi, n := range lp.need {
		rowOf[gi] = -1
		if n > 0 {
			rowOf[gi] = int32(len(b))
			b = append(b, float64(n))
		}
	}
	m := len(b)
	pi, x = make([]float64, len(lp.items)), make([]float64, len(lp.pats))
	if m == 0 {
		return pi, x
	}
	maxPrice := 0.0
	for _, k := range lp.kinds {
		maxPrice = math.Max(maxPrice, k.price)
	}
	// The columns and their entries live in buffers kept across solves (a column's part of the
	// shared entry arrays capped): the dive re-solves dozens of times, and allocating them afresh
	// each time was a third of the pattern LP's allocations.
	cols := slices.Grow(sb.cols[:0], 2*m+len(lp.pats)+1)
	basis := make([]int, m)
	nnz := 2 * m
	for _, pt := range lp.pats {
		nnz += len(pt.keys)
	}
	rowBuf, valBuf := slices.Grow(sb.rowBuf[:0], nnz), slices.Grow(sb.valBuf[:0], nnz)
	for r := 0; r < m; r++ {
		basis[r] = len(cols)
		rowBuf = append(rowBuf, int32(r), int32(r))
		valBuf = append(valBuf, 1, -1)
		n := len(rowBuf)
		cols = append(cols, sparseCol{cost: 10*maxPrice + 1, rows: rowBuf[n-2 : n-1 : n-1], vals: valBuf[n-2 : n-1 : n-1]})
		cols = append(cols, sparseCol{rows: rowBuf[n-1 : n : n], vals: valBuf[n-1 : n : n]})
	}
	colPat := sb.colPat[:0]
	defer func() { sb.cols, sb.rowBuf, sb.valBuf, sb.colPat = cols, rowBuf, valBuf, colPat }()
	for j, pt := range lp.pats {
		c := sparseCol{cost: pt.price}
		start := len(rowBuf)
		for i, gi := range pt.keys {
			if v := min(pt.vals[i], lp.need[gi]); v > 0 {
				rowBuf = append(rowBuf, rowOf[gi])
				valBuf = append(valBuf, float64(v))
			}
		}
		if end := len(rowBuf); end > start {
			c.rows, c.vals = rowBuf[start:end:end], valBuf[start:end:end]
			cols = append(cols, c)
			colPat = append(colPat, j)
		}
	}
	maxIter := 20*m + 200
	cold := func() (binv, xb []float64) {
		for r := range basis {
			basis[r] = 2 * r
		}
		binv = slices.Grow(lp.sbuf.binv[:0], m*m)[:m*m]
		xb = append(lp.sbuf.xb[:0], b...)
		lp.sbuf.binv, lp.sbuf.xb = binv, xb
		clear(binv)
		for i := 0; i < m; i++ {
			binv[i*m+i] = 1
		}
		return binv, xb
	}
	binv, xb := lp.warmStart(b, cols)
	repair := false // cols' last column is crashStart's repair column
	switch {
	case binv != nil:
		basis = lp.basis
		lp.warmStarts++
	default:
		if cb, cbinv, cxb, fix := lp.crashStart(b, cols, rowOf, colPat); cb != nil {
			basis, binv, xb = cb, cbinv, cxb
			if fix != nil {
				cols, repair = append(cols, *fix), true
			}
			lp.crashStarts++
			break
		}
		binv, xb = cold()
	}
	sb.spx.copies = nil
	if !lp.keepCopies {
		sb.spx.copies = lp.markCopies(cols, 2*m)
	}
	rpi, xs, _, iters := revisedSimplexWith(&sb.spx, m, b, cols, basis, binv, xb, maxIter)
	lp.work += float64(iters) * float64(m*m+len(cols))
	lp.pivots += iters
	if repair {
		cols = cols[:len(cols)-1]
		if xs[len(cols)] > 1e-9 { // the repair column stayed in: start again from the artificials
			basis = make([]int, m)
			binv, xb = cold()
			rpi, xs, _, iters = revisedSimplexWith(&sb.spx, m, b, cols, basis, binv, xb, maxIter)
			lp.work += float64(iters) * float64(m*m+len(cols))
			lp.pivots += iters
			lp.crashStarts--
		}
	}
	lp.basis, lp.basisNeed = basis, append(lp.basisNeed[:0], lp.need...)
	if slices.ContainsFunc(basis, func(j int) bool { return j >= len(cols) }) {
		lp.basisNeed = lp.basisNeed[:0] // the repair column, at 0, is still basic: no warm start from it
	}
	lp.nameBasis(basis, rowOf, colPat)
	for gi, r := range rowOf {
		if r >= 0 {
			pi[gi] = rpi[r]
		}
	}
	for k, j := range colPat {
		x[j] = xs[2*m+k]
	}
	return pi, x
}

// markCopies marks the columns of cols from from on that are copies (the same cost and the same
// entries) of an earlier one. Clipped to the residual need, patterns that differ only above it
// become the same column — on the EC2 model 17–19 % of the dive's columns — and the simplex need
// not price them (simplexScratch.copies): the pivots, and so the plans, are the same.
func (lp *patternLP) markCopies(cols []sparseCol, from int) []bool {
	sb := &lp.sbuf
	if sb.firstOf == nil {
		sb.firstOf = map[uint64]int32{}
	}
	clear(sb.firstOf)
	copies := slices.Grow(sb.copies[:0], len(cols))[:len(cols)]
	clear(copies)
	sb.copies = copies
	for j := from; j < len(cols); j++ {
		c := &cols[j]
		h := uint64(14695981039346656037) // FNV-1a over the cost and the entries' bits
		mix := func(v uint64) {
			h ^= v
			h *= 1099511628211
		}
		mix(math.Float64bits(c.cost))
		for t, r := range c.rows {
			mix(uint64(r))
			mix(math.Float64bits(c.vals[t]))
		}
		f, ok := sb.firstOf[h]
		if !ok {
			sb.firstOf[h] = int32(j)
			continue
		}
		o := &cols[f]
		if o.cost == c.cost && slices.Equal(o.rows, c.rows) && slices.Equal(o.vals, c.vals) {
			copies[j] = true
			lp.copyCols++
		}
	}
	lp.solveCols += len(cols) - from
	return copies
}

// price runs the pricing problem of every kind at duals pi and adds the patterns whose reduced
// cost is negative; it reports whether any was added.
func (lp *patternLP) price(pi []float64) bool {
	lp.orderByResource(pi)
	// The kinds no other dominates first, then the dominated ones, skipping those of which a root
	// dominator was proven unable to price out this round (it cannot either: see
	// dominatedKinds); the patterns are added in kind order, as if priced in that order.
	type priced struct {
		fills  []map[int]int
		worths []float64
	}
	res := slices.Grow(lp.pbufPriced[:0], len(lp.kinds))[:len(lp.kinds)]
	proven := slices.Grow(lp.pbufProven[:0], len(lp.kinds))[:len(lp.kinds)]
	// The kinds with a column in the basis of the solve that gave pi: that column is a fill worth
	// its price, so no bound proves them unable to price out and knapsack does not try.
	basic := slices.Grow(lp.pbufBasic[:0], len(lp.kinds))[:len(lp.kinds)]
	clear(basic)
	for _, bc := range lp.basisCols {
		if bc.pat >= 0 {
			basic[lp.pats[bc.pat].kind] = true
		}
	}
	defer func() { lp.pbufPriced, lp.pbufProven, lp.pbufBasic = res, proven, basic }()
	for pass := 0; pass < 2; pass++ {
		for ki := range lp.kinds {
			var roots []int
			if lp.domRoots != nil {
				roots = lp.domRoots[ki]
			}
			if (len(roots) == 0) != (pass == 0) {
				continue
			}
			if slices.ContainsFunc(roots, func(r int) bool { return proven[r] }) {
				res[ki], proven[ki] = priced{}, true
				lp.domSkipped++
				continue
			}
			lp.kbuf.basic = basic[ki] && !lp.allBounds
			fills, worths, cannot := lp.knapsack(&lp.kinds[ki], pi)
			res[ki], proven[ki] = priced{fills, worths}, cannot
		}
	}
	added := false
	for ki := range lp.kinds {
		k := &lp.kinds[ki]
		for i, counts := range res[ki].fills {
			if res[ki].worths[i] > k.price*(1+1e-6) && lp.add(ki, counts) {
				added = true
			}
		}
		res[ki] = priced{}
	}
	return added
}

// dominatedKinds sets domRoots: for a kind another dominates — its items (ok) are a subset of
// the other's, its allocatable is at most the other's in every resource, its price at least the
// other's (ties broken by index) — the kinds no other dominates that dominate it (there is one:
// dominance is a strict order), else nil. Every
// fill of the dominated kind is a fill of its dominator, worth the same, so when the dominator's
// knapsack bound proves no fill of it worth more than its price, no fill of the dominated kind
// (dearer) is worth more than its own: pricing skips it. Only the proof is shared: a dominated kind
// whose dominator may price out is priced as before, so the columns added are the same.
func (lp *patternLP) dominatedKinds() {
	K := len(lp.kinds)
	lp.domRoots = make([][]int, K)
	beats := func(j, i int) bool { // kind j dominates kind i
		a, b := &lp.kinds[i], &lp.kinds[j]
		if b.price > a.price {
			return false
		}
		ta, tb := lp.p.types[a.t], lp.p.types[b.t]
		if !lessEq(ta.alloc, tb.alloc) {
			return false
		}
		if b.price == a.price && lessEq(tb.alloc, ta.alloc) && len(b.ok) == len(a.ok) && j > i {
			return false // the same kind twice over: the first dominates
		}
		if len(b.ok) < len(a.ok) {
			return false
		}
		for _, g := range a.ok {
			if !lp.okMask[j][g] {
				return false
			}
		}
		return true
	}
	dominated := make([]bool, K)
	for i := range lp.kinds {
		for j := range lp.kinds {
			if j != i && beats(j, i) {
				dominated[i] = true
				break
			}
		}
	}
	for i := range lp.kinds {
		if !dominated[i] {
			continue
		}
		for j := range lp.kinds {
			if !dominated[j] && beats(j, i) {
				lp.domRoots[i] = append(lp.domRoots[i], j)
			}
		}
	}
}

// knapsack fills one node of kind k with the items of most dual worth: greedy fills in several
// orders (by worth per share of the node on the sum of resources, on the largest, on each
// resource alone), and returns the fills worth more than the node's price (those that price out).
//
// cannot reports that the kind was proven unable to price out (no item to fill it with, or its
// bound not above its price), not merely that no fill did.
func (lp *patternLP) knapsack(k *patKind, pi []float64) (fills []map[int]int, worths []float64, cannot bool) {
	t := lp.p.types[k.t]
	kb := &lp.kbuf
	cands := kb.cands[:0]
	for _, gi := range k.ok {
		if lp.need[gi] > 0 && pi[gi] > 1e-12 {
			cands = append(cands, gi)
		}
	}
	kb.cands = cands
	if len(cands) == 0 {
		return nil, nil, true
	}
	// A kind whose bound is not above its price cannot price out (the margin covers rounding in
	// the bound's arithmetic).
	// A kind with a basic column has a fill worth its price at these duals (that column's, the
	// clipped pattern), so L(y) ≥ its price for every y: the Lagrangian bound is not tried on it
	// (on the EC2-model shapes it never proved one, and a third of the bounds that ran to the end
	// were on such kinds). The columns added are the same either way — a bound only skips
	// knapsacks none of whose fills prices out.
	target := k.price * (1 + 1e-6) / (1 + 1e-9)
	wb, ri, ratio := lp.worthBound(k, pi, cands)
	if wb <= target {
		return nil, nil, true
	}
	if kb.basic {
		lp.basicSkipped++
	} else if lp.knapsackBound(k, pi, cands, ri, ratio, target) <= target {
		return nil, nil, true
	}
	share := func(gi, r int) float64 {
		if t.alloc[r] <= 0 {
			return 0
		}
		return float64(lp.items[gi].c.req[r]) / float64(t.alloc[r])
	}
	nOrders := 2 + len(lp.rows)
	pricesOut := func(worth float64) bool { return worth > k.price*(1+1e-6) }
	lp.scratch.reset(len(lp.items))
	keep := func(worth float64) { // the scratch fill, when it prices out
		if pricesOut(worth) {
			fills, worths = append(fills, lp.scratch.counts()), append(worths, worth)
		}
	}
	if len(kb.key) != len(lp.items) {
		kb.key, kb.used = make([]float64, len(lp.items)), lp.s.d.zero()
	}
	key, used := kb.key, kb.used
	ord := slices.Grow(kb.ord[:0], len(cands))[:len(cands)]
	defer func() { kb.ord = ord }()
	for o := 0; o < nOrders; o++ {
		if o >= 2 {
			ord = lp.kindOrder(ord[:0], o-2, k)
			keep(lp.fillOrder(t, ord, used, pi))
			continue
		}
		ord = ord[:len(cands)]
		for _, gi := range cands {
			size := 0.0
			for ri, r := range lp.rows {
				sh := share(gi, r)
				switch {
				case o == 0:
					size += sh
				case o == 1:
					size = math.Max(size, sh)
				case ri == o-2:
					size = sh
				}
			}
			key[gi] = pi[gi] / math.Max(size, 1e-9)
		}
		copy(ord, cands)
		slices.SortStableFunc(ord, func(a, b int) int { return cmp.Compare(key[b], key[a]) })
		keep(lp.fillOrder(t, ord, used, pi))
	}
	// The pair fills cost more; they run when no greedy fill prices out.
	if len(fills) == 0 {
		if best, worth := lp.pairFills(k, pi, cands); best != nil && pricesOut(worth) {
			fills, worths = append(fills, best), append(worths, worth)
		}
	}
	// Pod by pod (a few at a time on large nodes), the item of most worth per share of the room
	// left (summed, or on the tightest resource): the room shrinks as it fills, so the fill turns
	// to the items that use what is left, which the fixed orders above cannot.
	lp.loadReqF(cands)
	for o := 0; o < 2; o++ {
		keep(lp.roomFill(t, cands, pi, used, o == 1))
	}
	return fills, worths, false
}

// generate alternates solving and pricing until no pattern prices out, rounds pricing rounds
// were run, or the budget is spent.
func (lp *patternLP) generate(rounds int) (pi, x []float64) {
	var zs []float64
	for round := 0; ; round++ {
		pi, x = lp.solve()
		if lp.work > patternBudget {
			lp.exhaust = true
			return pi, x
		}
		z := 0.0
		for j, v := range x {
			z += v * lp.pats[j].price
		}
		zs = append(zs, z)
		if n := len(zs); n > tailOffRounds && zs[n-1-tailOffRounds]-z <= tailOff*z {
			lp.tailedOff = true
			return pi, x
		}
		if round == rounds || !lp.price(pi) {
			return pi, x
		}
	}
}

// dive rounds the LP to whole nodes: whole copies of what it buys, then the residual re-solved;
// when it buys nothing whole, its largest fraction rounded up. Once column generation has spent
// patternBudget the dive goes on over the columns generated so far (each re-solve is a small
// simplex); only past diveBudget does it stop and leave the rest to the greedy packing.
func (lp *patternLP) dive() []pattern {
	var out []pattern
	take := func(pt pattern) {
		c := map[int]int{}
		for g, n := range pt.counts {
			if v := min(n, lp.need[g]); v > 0 {
				c[g] = v
				lp.need[g] -= v
			}
		}
		if len(c) > 0 {
			out = append(out, newPattern(pt.kind, c, pt.price))
		}
	}
	left := func() int {
		n := 0
		for _, v := range lp.need {
			n += v
		}
		return n
	}
	for first := true; left() > 0; first = false {
		var x []float64
		switch {
		case lp.exhaust:
			_, x = lp.solve()
		case first:
			_, x = lp.generate(-1)
		default:
			_, x = lp.generate(diveRounds)
		}
		took := false
		for j, v := range x {
			for c := 0; c < int(math.Floor(v+1e-6)); c++ {
				take(lp.pats[j])
				took = true
			}
		}
		if lp.work > diveBudget {
			lp.stopped = true
			return out
		}
		if took {
			continue
		}
		bj, bv := -1, 1e-6
		for j, v := range x {
			if v > bv {
				bj, bv = j, v
			}
		}
		if bj < 0 {
			return out
		}
		take(lp.pats[bj])
	}
	return out
}

// fillOrder fills one node of type t with the items of ord in that order, each as many times as
// fits, into lp.scratch, and returns the fill's worth at duals pi.
func (lp *patternLP) fillOrder(t *itype, ord []int, used resVec, pi []float64) float64 {
	for r := range used {
		used[r] = 0
	}
	lp.scratch.clear()
	worth := 0.0
	for _, gi := range ord {
		n := fitCount(used, lp.items[gi].c.req, t.alloc, lp.need[gi])
		if n <= 0 {
			continue
		}
		addTimes(used, lp.items[gi].c.req, n)
		lp.scratch.put(gi, n)
		worth += float64(n) * pi[gi]
	}
	lp.work += float64(len(ord) * 100) // sort, fill and the pattern map: ~100 steps per candidate
	return worth
}

// fillCounts is a pricing fill's pods per item, dense so that the many fills that do not price
// out allocate nothing; counts copies out one that does.
type fillCounts struct {
	n       []int
	touched []int
}

func (f *fillCounts) reset(items int) {
	if len(f.n) != items {
		f.n, f.touched = make([]int, items), f.touched[:0]
	}
	f.clear()
}

func (f *fillCounts) clear() {
	for _, g := range f.touched {
		f.n[g] = 0
	}
	f.touched = f.touched[:0]
}

func (f *fillCounts) put(g, n int) {
	if f.n[g] == 0 {
		f.touched = append(f.touched, g)
	}
	f.n[g] += n
}

func (f *fillCounts) counts() map[int]int {
	m := make(map[int]int, len(f.touched))
	for _, g := range f.touched {
		m[g] = f.n[g]
	}
	return m
}

// orderByResource sorts, for a pricing round at duals pi, the items with pods left and positive
// dual by worth per unit of each resource row (byRes).
func (lp *patternLP) orderByResource(pi []float64) {
	var live []int
	for gi, n := range lp.need {
		if n > 0 && pi[gi] > 1e-12 {
			live = append(live, gi)
		}
	}
	lp.byRes = lp.byRes[:0]
	for _, r := range lp.rows {
		key := func(gi int) float64 {
			if q := lp.items[gi].c.req[r]; q > 0 {
				return pi[gi] / float64(q)
			}
			return math.MaxFloat64 / 4 * math.Min(pi[gi], 1) // needs none of r: first, by worth
		}
		ord := append([]int(nil), live...)
		slices.SortStableFunc(ord, func(a, b int) int { return cmp.Compare(key(b), key(a)) })
		lp.byRes = append(lp.byRes, ord)
		lp.work += float64(len(live) * 20)
	}
}

// kindOrder appends to dst the items kind k may use in the order byRes[ri].
func (lp *patternLP) kindOrder(dst []int, ri int, k *patKind) []int {
	mask := lp.okMask[k.id]
	for _, gi := range lp.byRes[ri] {
		if mask[gi] {
			dst = append(dst, gi)
		}
	}
	return dst
}
