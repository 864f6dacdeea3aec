package solver

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// pairFills is the pattern LP's strongest pricing heuristic. The best node of one type at the
// LP's duals is a multi-resource knapsack; its LP relaxation is optimal at a vertex where at
// most as many items as resources are fractional, and on cpu and memory that is typically one
// cpu-heavy and one memory-heavy pod shape in the proportion that fills both. So for pairs of
// items among those of most dual worth per unit of each resource, it solves the two-item
// vertex on every pair of resources, floors it (one item, then the other, first) and completes
// the node greedily with the rest by worth per share of the node. The best fill is returned.
// The fixed-order greedy fills cannot find these: they fill one shape to a resource's limit
// first and strand the other resource.
func (lp *patternLP) pairFills(k *patKind, pi []float64, cands []int) (best map[int]int, bestWorth float64) {
	t := lp.p.types[k.t]
	alloc := t.alloc
	rows := lp.rows
	share := func(g, r int) float64 {
		if alloc[r] <= 0 {
			return 0
		}
		return float64(lp.items[g].c.req[r]) / float64(alloc[r])
	}
	// Completion order: worth per summed share of the node. The buffers are the pricing's, kept
	// across kinds and rounds (pairFills runs for hundreds of kinds per round).
	pb := &lp.pbuf
	if len(pb.key) != len(lp.items) {
		pb.key, pb.inS, pb.counts = make([]float64, len(lp.items)), make([]bool, len(lp.items)), make([]int, len(lp.items))
		pb.used = lp.s.d.zero()
	}
	order := append(pb.order[:0], cands...)
	key, inS, S, top := pb.key, pb.inS, pb.S[:0], pb.top[:0]
	defer func() {
		for _, g := range S {
			inS[g] = false
		}
		pb.order, pb.S, pb.top = order, S, top
	}()
	for _, g := range cands {
		sz := 0.0
		for _, r := range rows {
			sz += share(g, r)
		}
		key[g] = pi[g] / math.Max(sz, 1e-9)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key[b], key[a]) })
	// The leaders: the few items of most worth per unit of each resource, and per summed share.
	const perResource = 3
	addTop := func(score func(g int) float64) {
		byScore := append(pb.byScore[:0], cands...)
		slices.SortStableFunc(byScore, func(a, b int) int { return cmp.Compare(score(b), score(a)) })
		for _, g := range byScore[:min(perResource, len(byScore))] {
			if !inS[g] {
				inS[g] = true
				S = append(S, g)
			}
		}
		pb.byScore = byScore
	}
	for ri := range rows {
		top = lp.kindOrder(top[:0], ri, k)
		for _, g := range top[:min(perResource, len(top))] {
			if !inS[g] {
				inS[g] = true
				S = append(S, g)
			}
		}
	}
	addTop(func(g int) float64 { return key[g] })
	sort.Ints(S)

	used, counts, touched := pb.used, pb.counts, pb.touched[:0]
	pb.best = pb.best[:0]
	defer func() {
		for _, g := range touched {
			counts[g] = 0
		}
		pb.touched = touched[:0]
	}()
	try := func(first, firstN, second int) {
		for r := range used {
			used[r] = 0
		}
		for _, g := range touched {
			counts[g] = 0
		}
		touched = touched[:0]
		worth := 0.0
		put := func(g, n int) {
			if n <= 0 {
				return
			}
			addTimes(used, lp.items[g].c.req, n)
			if counts[g] == 0 {
				touched = append(touched, g)
			}
			counts[g] += n
			worth += float64(n) * pi[g]
		}
		put(first, min(firstN, fitCount(used, lp.items[first].c.req, alloc, lp.need[first])))
		if second >= 0 {
			put(second, fitCount(used, lp.items[second].c.req, alloc, lp.need[second]))
		}
		for _, g := range order {
			put(g, fitCount(used, lp.items[g].c.req, alloc, lp.need[g]-counts[g]))
		}
		lp.work += float64(20 * len(order))
		if worth > bestWorth*(1+1e-12) {
			bestWorth = worth
			pb.best = pb.best[:0]
			for _, g := range touched {
				pb.best = append(pb.best, [2]int{g, counts[g]})
			}
		}
	}
	for _, a := range S {
		try(a, lp.need[a], -1)
	}
	for i, a := range S {
		for _, b := range S[i+1:] {
			qa, qb := lp.items[a].c.req, lp.items[b].c.req
			for x, r1 := range rows {
				for _, r2 := range rows[x+1:] {
					// a·qa[r1] + b·qb[r1] = alloc[r1]; a·qa[r2] + b·qb[r2] = alloc[r2]
					det := float64(qa[r1])*float64(qb[r2]) - float64(qb[r1])*float64(qa[r2])
					if math.Abs(det) < 1e-9 {
						continue
					}
					na := (float64(alloc[r1])*float64(qb[r2]) - float64(qb[r1])*float64(alloc[r2])) / det
					nb := (float64(qa[r1])*float64(alloc[r2]) - float64(alloc[r1])*float64(qa[r2])) / det
					if na < 0 || nb < 0 {
						continue
					}
					try(a, int(math.Floor(na+1e-9)), b)
					try(b, int(math.Floor(nb+1e-9)), a)
				}
			}
		}
	}
	if len(pb.best) > 0 {
		best = make(map[int]int, len(pb.best))
		for _, gn := range pb.best {
			best[gn[0]] = gn[1]
		}
	}
	return best, bestWorth
}

// worthBound bounds what any node of kind k is worth at duals pi: for each resource alone, the
// fractional knapsack (items by worth per unit of it, the last one split) is at least any fill's
// worth, so the least of them is too. A kind whose bound is not above its price cannot price
// out, and the pricing skips it. ri and ratio say where the least bound was found: on rows[ri],
// with the split item's worth per unit of it (zero when everything fits), which is that
// single-resource knapsack's dual price and starts knapsackBound.
func (lp *patternLP) worthBound(k *patKind, pi []float64, cands []int) (bound float64, ri int, ratio float64) {
	alloc := lp.p.types[k.t].alloc
	bound, ri = math.Inf(1), -1
	ord := lp.kbuf.bound[:0]
	defer func() { lp.kbuf.bound = ord }()
	for i, r := range lp.rows {
		// cands in the round's order for r (byRes): items needing none of r come first.
		ord = lp.kindOrder(ord[:0], i, k)
		if len(ord) > 0 && lp.items[ord[0]].c.req[r] <= 0 { // r bounds nothing on its own
			continue
		}
		room, worth, split := float64(alloc[r]), 0.0, 0.0
		for _, g := range ord {
			q := float64(lp.items[g].c.req[r])
			if n := float64(lp.need[g]); n*q < room {
				worth += n * pi[g]
				room -= n * q
				continue
			}
			worth += room / q * pi[g] // the item that fills the node: split
			split = pi[g] / q
			break
		}
		if worth < bound {
			bound, ri, ratio = worth, i, split
		}
	}
	lp.work += float64(len(cands) * len(lp.rows) * 10)
	return bound, ri, ratio
}

// knapsackBound is the Lagrangian (LP-dual) bound on what a node of kind k is worth at duals
// pi, over all its resources at once. The pricing knapsack is
//
//	max Σ_g pi_g·n_g  s.t.  Σ_g req_gr·n_g ≤ alloc_r for every resource r,  0 ≤ n_g ≤ need_g,
//
// and for any resource prices y ≥ 0 its LP dual gives the bound
//
//	L(y) = Σ_r alloc_r·y_r + Σ_g need_g·max(0, pi_g − Σ_r req_gr·y_r)
//
// on every fill, whole or not. worthBound is L at a y on one resource only; a cpu-heavy and a
// memory-heavy shape that together fill a node are each almost free on the other's resource
// there, so that bound is loose exactly where pricing is most expensive. knapsackBound starts
// from the better of worthBound's y and this kind's y of the last round (the duals move little
// between rounds), tries rays that mix the resources (rayMin), then lowers L by exact
// minimisation along one resource at a time (lineMin: a fractional knapsack on that resource,
// the worths net of the others' prices), and stops as soon as L is at most target (the kind
// cannot price out) or a sweep gains < 0.1 %. Every y ≥ 0 gives
// a valid bound, so stopping early never prunes a kind that could price out.
func (lp *patternLP) knapsackBound(k *patKind, pi []float64, cands []int, ri int, ratio, target float64) float64 {
	R := len(lp.rows)
	if len(lp.lagY) != len(lp.kinds)*R {
		lp.lagY = make([]float64, len(lp.kinds)*R)
		lp.lagSet = make([]bool, len(lp.kinds))
	}
	y := lp.lagY[k.id*R : (k.id+1)*R]
	alloc := lp.p.types[k.t].alloc
	eval := func(y []float64) float64 {
		v := 0.0
		for i, r := range lp.rows {
			v += float64(alloc[r]) * y[i]
		}
		for _, g := range cands {
			a := pi[g]
			for i, r := range lp.rows {
				a -= float64(lp.items[g].c.req[r]) * y[i]
			}
			if a > 0 {
				v += float64(lp.need[g]) * a
			}
		}
		return v
	}
	start := slices.Grow(lp.kbuf.y[:0], R)[:R]
	lp.kbuf.y = start
	clear(start)
	if ri >= 0 {
		start[ri] = ratio
	}
	best := eval(start)
	if lp.lagSet[k.id] {
		if v := eval(y); v < best {
			best = v
			copy(start, y)
		}
	}
	lp.work += float64(2 * len(cands) * R)
	// Rays mixing the resources, where a cpu-heavy and a memory-heavy shape that fill a node
	// together cost their worth; the resource-by-resource descent below cannot leave the single
	// resource's y towards them (L has a kink across its path).
	if R > 1 && best > target {
		w := slices.Grow(lp.kbuf.w[:0], R)[:R]
		lp.kbuf.w = w
		try := func() bool {
			if v := lp.rayMin(w, y, alloc, pi, cands); v < best {
				best = v
				copy(start, y)
			}
			return best <= target
		}
		clear(w)
		for i := range w {
			w[i] = 1
		}
		done := try()
		for i := 0; i < R && !done; i++ {
			for j := i + 1; j < R && !done; j++ {
				for _, a := range [...]float64{0.25, 0.5, 0.75} {
					clear(w)
					w[i], w[j] = a, 1-a
					if done = try(); done {
						break
					}
				}
			}
		}
	}
	copy(y, start)
	lp.lagSet[k.id] = true
	if best <= target {
		return best
	}
	const sweeps = 3
	for sweep := 0; sweep < sweeps && best > target; sweep++ {
		before := best
		for i := range lp.rows {
			if best = lp.lineMin(y, i, alloc, pi, cands); best <= target {
				return best
			}
		}
		if best > before*(1-1e-3) {
			break
		}
	}
	return best
}

// lineMin minimises L(y) (knapsackBound) over y_i with the other prices fixed, sets y_i to the
// minimiser and returns L there. Along y_i, L is convex and piecewise linear with a kink at
// each item's break-even price (its worth net of the other resources, per unit of rows[i]); its
// slope is alloc − the need of the items still worth more, so the minimum is at the break-even
// price where that need first reaches the node's room (a fractional knapsack on rows[i]).
func (lp *patternLP) lineMin(y []float64, i int, alloc resVec, pi []float64, cands []int) float64 {
	r := lp.rows[i]
	base := 0.0
	for s, rs := range lp.rows {
		if s != i {
			base += float64(alloc[rs]) * y[s]
		}
	}
	kinks := lp.kbuf.kinks[:0]
	for _, g := range cands {
		a := pi[g]
		for s, rs := range lp.rows {
			if s != i {
				a -= float64(lp.items[g].c.req[rs]) * y[s]
			}
		}
		if a <= 0 {
			continue
		}
		q := float64(lp.items[g].c.req[r])
		if q <= 0 {
			base += float64(lp.need[g]) * a
			continue
		}
		kinks = append(kinks, kink{at: a / q, a: a, q: q, need: float64(lp.need[g])})
	}
	lp.kbuf.kinks = kinks
	lp.work += float64(len(cands)*len(lp.rows)*2 + len(kinks)*8)
	yi, v := kinkMin(kinks, float64(alloc[r]))
	y[i] = yi
	return base + v
}

// rayMin minimises L(y) (knapsackBound) over the ray y = σ·u, u_r = w_r/alloc_r (resource r
// weighted by w_r as a share of the node), sets y to the minimiser and returns L there. Along the
// ray the node is one resource of room Σ w_r and each pod takes its weighted shares of it, so the
// minimum is that fractional knapsack's: σ at the worth per combined share of the item it splits.
func (lp *patternLP) rayMin(w, y []float64, alloc resVec, pi []float64, cands []int) float64 {
	room := 0.0
	for i, r := range lp.rows {
		if alloc[r] > 0 {
			room += w[i]
		}
	}
	base := 0.0
	kinks := lp.kbuf.kinks[:0]
	for _, g := range cands {
		q := 0.0
		for i, r := range lp.rows {
			if alloc[r] > 0 {
				q += w[i] * float64(lp.items[g].c.req[r]) / float64(alloc[r])
			}
		}
		if q <= 0 {
			base += float64(lp.need[g]) * pi[g]
			continue
		}
		kinks = append(kinks, kink{at: pi[g] / q, a: pi[g], q: q, need: float64(lp.need[g])})
	}
	lp.kbuf.kinks = kinks
	lp.work += float64(len(cands)*len(lp.rows)*2 + len(kinks)*8)
	sigma, v := kinkMin(kinks, room)
	v += base
	for i, r := range lp.rows {
		y[i] = 0
		if alloc[r] > 0 {
			y[i] = sigma * w[i] / float64(alloc[r])
		}
	}
	return v
}

// kinkMin minimises room·t + Σ need·max(0, a − q·t) over t ≥ 0, the part of L along a line or
// ray that its kinks carry: the slope is room − the need·q of the kinks above t, so the minimum
// is at the kink where that first reaches the room (a fractional knapsack: kinks by worth per
// unit, the one that fills the room split). kinks is reordered in place (kinkAt).
func kinkMin(kinks []kink, room float64) (t, v float64) {
	t = kinkAt(kinks, room)
	v = room * t
	for _, kk := range kinks {
		if d := kk.a - kk.q*t; d > 0 {
			v += kk.need * d
		}
	}
	return t, v
}

// kinkAt is the highest break-even point at which the kinks at or above it take the room
// (Σ need·q ≥ room), 0 when all of them do not: the kink a sort by at, highest first, reaches
// the room at, found by selection instead (three-way partitions around a median of three, then
// only the side that holds it), since this runs for every kind at every pricing round.
func kinkAt(kinks []kink, room float64) float64 {
	for len(kinks) > 0 {
		n := len(kinks)
		a, b, c := kinks[0].at, kinks[n/2].at, kinks[n-1].at
		p := max(min(a, b), min(max(a, b), c))
		// [0, hi): at > p; [hi, eq): at == p; [j, n): at < p (or not comparable).
		hi, eq := 0, 0
		wHi, wEq := 0.0, 0.0
		for j := n; eq < j; {
			switch kk := kinks[eq]; {
			case kk.at > p:
				wHi += kk.need * kk.q
				kinks[eq], kinks[hi] = kinks[hi], kinks[eq]
				hi++
				eq++
			case kk.at == p:
				wEq += kk.need * kk.q
				eq++
			default:
				j--
				kinks[eq], kinks[j] = kinks[j], kinks[eq]
			}
		}
		if eq == 0 { // p is NaN: no progress by partitions
			return sortedKinkAt(kinks, room)
		}
		switch {
		case hi > 0 && wHi >= room:
			kinks = kinks[:hi]
		case wHi+wEq >= room:
			return p
		default:
			room -= wHi + wEq
			kinks = kinks[eq:]
		}
	}
	return 0
}

// sortedKinkAt is kinkAt by sorting, highest at first.
func sortedKinkAt(kinks []kink, room float64) float64 {
	slices.SortFunc(kinks, func(x, z kink) int { return cmp.Compare(z.at, x.at) })
	used := 0.0
	for _, kk := range kinks {
		if used += kk.need * kk.q; used >= room {
			return kk.at
		}
	}
	return 0
}

// kink is one item's break-even point on a line of knapsackBound's L: worth a (net of the other
// resources' prices) and request q on the line's resource, so it stops counting at y = a/q.
type kink struct{ at, a, q, need float64 }

// addTimes adds n × req to used; n pods of req fit (fitCount), so no sum overflows.
func addTimes(used, req resVec, n int) {
	for r, q := range req {
		used[r] += int64(n) * q
	}
}

// loadReqF stores, for the items cands, their requests on the LP's rows as floats
// (kbuf.reqF[g*len(rows)+i]) for roomFill.
func (lp *patternLP) loadReqF(cands []int) {
	R := len(lp.rows)
	kb := &lp.kbuf
	if len(kb.reqF) != len(lp.items)*R {
		kb.reqF, kb.remF = make([]float64, len(lp.items)*R), make([]float64, R)
	}
	for _, g := range cands {
		for i, r := range lp.rows {
			kb.reqF[g*R+i] = float64(lp.items[g].c.req[r])
		}
	}
}

// roomFill fills one node of type t pod by pod (a quarter of what fits at a time) with the item
// of most worth per share of the room left, summed over the rows or, with tightest, on the
// tightest row, into lp.scratch, and returns the fill's worth at duals pi. An item that no longer
// fits, or whose pods are all in, never comes back (the room only shrinks), so each step scans
// only the items still in play, in cands' order (ties go to the first, as in a full scan). The
// work charged is that of a full scan of cands per step.
func (lp *patternLP) roomFill(t *itype, cands []int, pi []float64, used resVec, tightest bool) float64 {
	R := len(lp.rows)
	kb := &lp.kbuf
	reqF, remF := kb.reqF, kb.remF
	clear(used)
	lp.scratch.clear()
	live := append(kb.live[:0], cands...)
	defer func() { kb.live = live[:0] }()
	worth := 0.0
	for {
		for i, r := range lp.rows {
			remF[i] = float64(max(t.alloc[r]-used[r], 1))
		}
		bi, bk := -1, 0.0
		j := 0
		for _, g := range live {
			if lp.scratch.n[g] >= lp.need[g] || !fitsIn(used, lp.items[g].c.req, t.alloc) {
				continue
			}
			live[j] = g
			j++
			size, f := 0.0, reqF[g*R:g*R+R]
			for i, q := range f {
				if q /= remF[i]; !tightest {
					size += q
				} else if q > size {
					size = q
				}
			}
			if size < 1e-9 {
				size = 1e-9
			}
			if k := pi[g] / size; bi < 0 || k > bk {
				bi, bk = g, k
			}
		}
		live = live[:j]
		lp.work += float64(len(cands) * (20 + 10*R))
		if bi < 0 {
			return worth
		}
		req := lp.items[bi].c.req
		n := max(1, fitCount(used, req, t.alloc, lp.need[bi]-lp.scratch.n[bi])/4)
		addTimes(used, req, n)
		lp.scratch.put(bi, n)
		worth += float64(n) * pi[bi]
	}
}
