package solver

import (
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/joist-dev/joist/requirements"
)

// Opening repack's new nodes: simulated fills of each candidate type, the one worth most per
// dollar kept.

// freeFill is a simulated packing of items onto one node of a type.
type freeFill struct {
	t      int
	counts []int
	used   resVec
	reqs   requirements.Set
	zm, cm uint64
	n      int
	// usedPrimary is the primary items' part of used.
	usedPrimary resVec
	// primaryBuf: usedPrimary's storage, kept when the fill is reused (simulateFillInto)
	primaryBuf resVec
}

// packNew opens one node for the pods left of items[:primary] (in zone, or any zone for -1),
// topped up with pods of the other items: it simulates filling each candidate type
// (best-balancing pod first) and keeps the type whose net price per unit of primary demand (at
// the resource prices) is lowest, where the top-up pods are credited with the least they would
// cost elsewhere (their value at bestRate, the best value per dollar of any type). nil if no
// primary pod was placed.
func (s *solver) packNew(p *pool, items []*item, primary, zone int, bestRate float64) (*node, *freeFill) {
	var best *freeFill
	bestCost := 0.0
	value := func(v resVec) float64 {
		x := 0.0
		for r, q := range v {
			x += float64(q) * s.w[r]
		}
		return x
	}
	compat := make([]bitset, len(items))
	for i, it := range items {
		compat[i] = s.compat(p, s.effAt(it.c, 0).alts[0])
	}
	// Types by their best conceivable cost (price per value of a full node): without top-up
	// credit no fill of a type costs less per value than that, so the scan stops there.
	zm := p.zoneMask
	if zone >= 0 {
		zm &= 1 << uint(zone)
	}
	// After an LP-started repack the items carry the LP's duals: a fill is then worth what its
	// pods are worth to the LP, which knows which family each pod is best on, rather than its
	// resources at one price each.
	useDuals := false
	for _, it := range items {
		useDuals = useDuals || (it.left() > 0 && it.dual > 0)
	}
	order := make([]int, 0, len(p.types))
	floor := make([]float64, len(p.types))
	for ti, t := range p.types {
		pr, _ := t.price(zm, p.ctMask)
		if v := value(t.alloc); pr > 0 && v > 0 {
			floor[ti] = pr / v
			order = append(order, ti)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return floor[order[a]] < floor[order[b]] })
	// spare: a fill that lost (or nil), whose buffers the next simulated fill reuses; fill: the
	// top-up part of a fill's use
	var spare *freeFill
	fill := s.d.zero()
	shapes, nShapes := s.reqShapes(items)
	for _, ti := range order {
		t := p.types[ti]
		if best != nil && !useDuals && floor[ti] >= bestCost {
			break
		}
		f := s.simulateFillInto(spare, p, ti, items, shapes, nShapes, compat, primary, zone)
		if f == nil {
			continue
		}
		spare = f // unless it wins, below
		pr, _ := t.price(f.zm, f.cm)
		if pr <= 0 {
			continue
		}
		vp := value(f.usedPrimary)
		if vp <= 0 {
			vp = float64(f.n) * 1e-12
		}
		copy(fill, f.used)
		fill.sub(f.usedPrimary)
		credit := 0.0
		if bestRate > 0 {
			credit = value(fill) / bestRate
		}
		cost := (pr - credit) / vp
		if useDuals {
			worth := 0.0
			for i, k := range f.counts {
				worth += float64(k) * items[i].dual
			}
			cost = pr / worth
		}
		if best == nil || cost < bestCost-1e-12*math.Abs(bestCost) {
			best, bestCost, spare = f, cost, best
		}
	}
	if best == nil {
		return nil, nil
	}
	return s.commitFill(p, best, items, zone), best
}

// repeatable reports whether every item of a fill still has the pods the fill took.
func repeatable(f *freeFill, items []*item) bool {
	for i, it := range items {
		if f.counts[i] > it.left() {
			return false
		}
	}
	return true
}

// commitFill opens a node holding a simulated fill of items (nil if no type holds it).
func (s *solver) commitFill(p *pool, best *freeFill, items []*item, zone int) *node {
	n := &node{id: len(s.nodes), name: "new-" + itoa(len(s.open)), pool: p, zone: zone,
		used: best.used.clone(), reqs: best.reqs, zoneMask: best.zm, ctMask: best.cm}
	if zone < 0 && bits.OnesCount64(best.zm) == 1 {
		n.zone = bits.TrailingZeros64(best.zm)
	}
	n.options = s.optionsFor(p, n.reqs, n.used, n.zoneMask, n.ctMask)
	n.cheap = cheapest(p, n.options, n.zoneMask, n.ctMask)
	if n.cheap < 0 {
		return nil
	}
	if p.limited { // counted now; withinLimits checks the pass's total
		n.commit = p.types[n.cheap].capacity
		p.committed.add(n.commit)
	}
	for i, it := range items {
		if k := best.counts[i]; k > 0 {
			s.withItem(it, func() { s.assign(it.c, n, k) })
			it.next += k
		}
	}
	s.refreshAlloc(n)
	s.nodes = append(s.nodes, n)
	s.open = append(s.open, n)
	return n
}

// simulateFill packs the pods left of items onto one node of type ti, best-balancing pod first:
// items[:primary] while any fits, then any item; the node's requirements stay consistent. nil if
// no primary pod fits.
func (s *solver) simulateFill(p *pool, ti int, items []*item, compat []bitset, primary, zone int) *freeFill {
	shapes, n := s.reqShapes(items)
	return s.simulateFillInto(nil, p, ti, items, shapes, n, compat, primary, zone)
}

// reqShapes numbers the distinct requests of items (shapes[i]: item i's, in order of first
// appearance) and returns how many there are.
func (s *solver) reqShapes(items []*item) (shapes []int32, n int) {
	shapes = slices.Grow(s.fillShapes[:0], len(items))[:len(items)]
	reps := s.fillReps[:0]
	defer func() { s.fillShapes, s.fillReps = shapes, reps[:0] }()
	for i, it := range items {
		d := slices.IndexFunc(reps, func(r resVec) bool { return slices.Equal(r, it.c.req) })
		if d < 0 {
			d = len(reps)
			reps = append(reps, it.c.req)
		}
		shapes[i] = int32(d)
	}
	return shapes, len(reps)
}

// simulateFillInto is simulateFill in the buffers of spare (a fill the caller no longer needs;
// nil: new ones), which it returns; spare's contents are not read. shapes numbers the items'
// distinct requests (reqShapes; nShapes of them): within a step, items of one request fit or
// not alike and score alike (the same function of the same vectors), so each request is scored
// once per step.
func (s *solver) simulateFillInto(spare *freeFill, p *pool, ti int, items []*item, shapes []int32, nShapes int, compat []bitset, primary, zone int) *freeFill {
	t := p.types[ti]
	zm := p.zoneMask
	if zone >= 0 {
		zm &= 1 << uint(zone)
	}
	if t.zonesFor(zm, p.ctMask) == 0 {
		return nil
	}
	// live: the items still in play, in index order (the primary ones first: they are a
	// prefix); ok[i] is false once item i is out, and the scans below drop it from live.
	ok := slices.Grow(s.fillOK[:0], len(items))[:len(items)]
	clear(ok)
	live := slices.Grow(s.fillLive[:0], len(items))
	defer func() { s.fillOK, s.fillLive = ok, live[:0] }()
	nPrimary := 0
	for i, it := range items {
		if it.left() == 0 || (it.zone >= 0 && it.zone != zone) {
			continue
		}
		if ok[i] = compat[i].has(ti) && lessEq(it.c.req, t.alloc); ok[i] {
			live = append(live, int32(i))
			if i < primary {
				nPrimary++
			}
		}
	}
	if nPrimary == 0 {
		return nil
	}
	f := spare
	if f == nil || cap(f.counts) < len(items) {
		f = &freeFill{counts: make([]int, len(items)), used: s.d.zero()}
	} else {
		f.counts = f.counts[:len(items)]
		clear(f.counts)
		clear(f.used)
	}
	*f = freeFill{t: ti, counts: f.counts, used: f.used, reqs: p.reqs, zm: zm, cm: p.ctMask, primaryBuf: f.primaryBuf}
	limit := primary
	if len(s.fillRem) != s.d.n() {
		s.fillRem = s.d.zero()
	}
	rem := s.fillRem
	// memoStep[sh]: the step whose fit and score of request sh memoFit, memoScore hold
	memoStep := slices.Grow(s.fillMemoStep[:0], nShapes)[:nShapes]
	clear(memoStep)
	memoFit := slices.Grow(s.fillMemoFit[:0], nShapes)[:nShapes]
	memoScore := slices.Grow(s.fillMemoScore[:0], nShapes)[:nShapes]
	defer func() { s.fillMemoStep, s.fillMemoFit, s.fillMemoScore = memoStep, memoFit, memoScore }()
	step := int32(0)
	for {
		step++
		for r := range rem {
			rem[r] = t.alloc[r] - f.used[r]
		}
		// Each step scans the items of live below limit (an item out of play never comes
		// back, so this is the scan of items[:limit] that skips those out, in the same order).
		bi, bestScore, eligible := -1, -1.0, 0
		scan := live[:nPrimary]
		if limit > primary {
			scan = live
		}
		j := 0
		for _, i32 := range scan {
			i := int(i32)
			it := items[i]
			if !ok[i] {
				continue
			}
			// The node only fills up: an item out of pods or that no longer fits is out for good.
			if f.counts[i] >= it.left() {
				ok[i] = false
				continue
			}
			sh := shapes[i]
			if memoStep[sh] != step {
				memoStep[sh] = step
				if memoFit[sh] = fitsIn(f.used, it.c.req, t.alloc); memoFit[sh] {
					memoScore[sh] = fitScore(it.c.req, rem, t.alloc)
				}
			}
			if !memoFit[sh] {
				ok[i] = false
				continue
			}
			scan[j] = i32
			j++
			eligible++
			if sc := memoScore[sh]; sc > bestScore {
				bi, bestScore = i, sc
			}
		}
		if limit > primary {
			live = live[:j]
			nPrimary = 0
			for nPrimary < j && int(live[nPrimary]) < primary {
				nPrimary++
			}
		} else {
			// the primary prefix compacted; the rest moved up behind it
			live = append(live[:j], live[nPrimary:]...)
			nPrimary = j
		}
		if bi < 0 {
			if limit < len(items) && f.usedPrimary != nil {
				limit = len(items)
				continue
			}
			break
		}
		c := items[bi].c
		if f.counts[bi] == 0 {
			a := s.effAt(c, 0).alts[0]
			reqs := f.reqs
			if len(a.reqs) > 0 {
				reqs = s.and(f.reqs, a)
			}
			zm, cm := f.zm&a.zoneMask, f.cm&a.ctMask
			if reqs.Conflict() != "" || t.zonesFor(zm, cm) == 0 || !s.admitted(p, reqs).has(ti) {
				ok[bi] = false
				continue
			}
			f.reqs, f.zm, f.cm = reqs, zm, cm
		}
		// With one class left that fits, the balanced fill takes it until it no longer fits.
		// Otherwise it takes a few pods at a time (an eighth of what would fit), which costs little
		// balance and keeps the simulation cheap on large types.
		k := fitCount(f.used, c.req, t.alloc, items[bi].left()-f.counts[bi])
		if eligible > 1 {
			k = max(1, k/8)
		}
		if bi < primary && f.usedPrimary == nil {
			if f.primaryBuf == nil {
				f.primaryBuf = s.d.zero()
			}
			f.usedPrimary = f.primaryBuf
			clear(f.usedPrimary)
		}
		for range k {
			f.used.add(c.req)
			if bi < primary {
				f.usedPrimary.add(c.req)
			}
		}
		f.counts[bi] += k
		f.n += k
	}
	if f.usedPrimary == nil {
		return nil
	}
	return f
}
