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
// out, and the pricing skips it.
func (lp *patternLP) worthBound(k *patKind, pi []float64, cands []int) float64 {
	alloc := lp.p.types[k.t].alloc
	bound := math.Inf(1)
	ord := lp.kbuf.bound[:0]
	defer func() { lp.kbuf.bound = ord }()
	for ri, r := range lp.rows {
		// cands in the round's order for r (byRes): items needing none of r come first.
		ord = lp.kindOrder(ord[:0], ri, k)
		if len(ord) > 0 && lp.items[ord[0]].c.req[r] <= 0 { // r bounds nothing on its own
			continue
		}
		room, worth := float64(alloc[r]), 0.0
		for _, g := range ord {
			q := float64(lp.items[g].c.req[r])
			n := math.Min(float64(lp.need[g]), room/q)
			worth += n * pi[g]
			if room -= n * q; room <= 0 {
				break
			}
		}
		bound = math.Min(bound, worth)
	}
	lp.work += float64(len(cands) * len(lp.rows) * 10)
	return bound
}

// addTimes adds n × req to used; n pods of req fit (fitCount), so no sum overflows.
func addTimes(used, req resVec, n int) {
	for r, q := range req {
		used[r] += int64(n) * q
	}
}
