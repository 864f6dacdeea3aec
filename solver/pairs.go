package solver

import (
	"math"
	"slices"
	"sort"
)

// pairBudget bounds the node pairs rebalance prices per pool and round (most wasteful contents
// first; a round the budget ends is reported in Result.Passes); pairTypes bounds the instance
// types it tries as the first node of a pair.
const (
	pairBudget  = 3000
	pairTypes   = 8
	pairRounds  = 2
	pairsPerKey = 4
)

// rebalance re-packs pairs of planned nodes whose pods may go anywhere in the pool: the pods of
// both are re-split over one or two nodes of whichever types (family, architecture, size) hold
// them for the least, and the pair is replaced only when that is cheaper. It covers merging two
// nodes into one cheaper node, swapping pods between a cpu-bound and a memory-bound node so both
// fit smaller types, and downsizing. Nodes with the same contents repeat the same move, so pairs
// are priced once per pair of contents.
func (s *solver) rebalance(memo *passMemo) {
	for _, p := range s.pools {
		if len(p.minValues) == 0 {
			s.withinLimits(p, func() { s.rebalancePool(p, memo) })
		}
	}
}

func (s *solver) rebalancePool(p *pool, memo *passMemo) {
	free := map[*class]int{}
	for _, c := range s.classes {
		if k := s.movable(c, p); k != notMovable && len(c.ports) == 0 {
			free[c] = k
		}
	}
	if len(free) == 0 {
		return
	}
	tried := map[[2]string]bool{}
	for round := 0; round < pairRounds; round++ {
		var keys []string
		byKey := map[string][]*node{}
		for _, n := range s.open {
			if n.pool != p || !n.isNew() || len(n.pods) == 0 || n.cheap < 0 {
				continue
			}
			ok := true
			for _, c := range n.cls {
				k := free[c]
				ok = ok && (k == freeMove || (k == zoneLocked && n.zone >= 0))
			}
			if !ok {
				continue
			}
			k := contentKey(n, memo.rank)
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], n)
		}
		// Most wasteful contents first: the pairs that can gain involve a node whose cheapest
		// type is part empty on its binding resource.
		waste := map[string]float64{}
		for _, k := range keys {
			n := byKey[k][0]
			alloc, fill := p.types[n.cheap].alloc, 0.0
			for r, v := range n.used {
				if alloc[r] > 0 {
					fill = max(fill, float64(v)/float64(alloc[r]))
				}
			}
			waste[k] = (1 - fill) * s.nodePrice(n)
		}
		sort.SliceStable(keys, func(x, y int) bool { return waste[keys[x]] > waste[keys[y]] })
		budget := min(pairBudget, pairsPerKey*len(keys))
		changed := false
		for i := 0; i < len(keys) && budget > 0; i++ {
			for j := i; j < len(keys) && budget > 0; j++ {
				pk := [2]string{keys[i], keys[j]}
				if tried[pk] {
					continue
				}
				if memo.pairFailed[pk] {
					// Re-split before, by an earlier call, with the same contents, and it did
					// not pay: the pair fails again (its outcome depends on the two contents
					// alone), so it is charged to the budget as that try would be, not priced.
					budget--
					tried[pk] = true
					s.tally.pairsKnown++
					continue
				}
				for {
					ga, gb := byKey[keys[i]], byKey[keys[j]]
					if len(ga) == 0 || len(gb) == 0 || (i == j && len(ga) < 2) {
						break
					}
					a, b := ga[0], gb[0]
					if i == j {
						b = ga[1]
					}
					budget--
					s.tally.pairsPriced++
					if !s.rebalancePair(p, a, b, free) {
						tried[pk] = true
						memo.pairFailed[pk] = true
						break
					}
					changed = true
					byKey[keys[i]] = byKey[keys[i]][1:]
					if i == j {
						byKey[keys[i]] = byKey[keys[i]][1:]
					} else {
						byKey[keys[j]] = byKey[keys[j]][1:]
					}
				}
				if len(byKey[keys[i]]) == 0 {
					break
				}
			}
		}
		if budget == 0 && pairBudget < pairsPerKey*len(keys) {
			// The budget, not the pairs, ended the round: reported in Result.Passes.
			s.tally.pairCut++
			s.tally.pairContents = max(s.tally.pairContents, len(keys))
		}
		if !changed {
			return
		}
	}
}

// rebalancePair re-splits the pods of a and b when one or two nodes hold them for less; it
// reports whether it changed the plan.
// Pods locked to their zone (zone spread, volumes) move only between two nodes of that zone, so
// no zone count changes.
func (s *solver) rebalancePair(p *pool, a, b *node, kind map[*class]int) bool {
	zone := -1
	for _, n := range []*node{a, b} {
		for _, c := range n.cls {
			if kind[c] == zoneLocked {
				if zone >= 0 && zone != n.zone {
					return false
				}
				zone = n.zone
				break
			}
		}
	}
	cur := s.nodePrice(a) + s.nodePrice(b)
	// both is scratch (pairBuf): applyPair copies its pods out, nothing keeps it.
	both := &s.pairBuf.both
	// Its used is the two nodes' together: the balanced fill's part B is what part A leaves of
	// it (until session 18 it was left zero, so every balanced re-split's part B was priced as
	// holding nothing — the cheapest type — and the re-split was undone by applyPair).
	used := a.used.clone()
	used.add(b.used)
	*both = node{pool: p, pods: append(append(both.pods[:0], a.pods...), b.pods...),
		cls: append(append(both.cls[:0], a.cls...), b.cls...), used: used}
	compat := p.all
	zm, cm := p.zoneMask, p.ctMask
	reqs := p.reqs
	seen := map[*class]bool{}
	for _, c := range both.cls {
		if seen[c] {
			continue
		}
		seen[c] = true
		al := s.effAt(c, 0).alts[0]
		compat = compat.and(s.compat(p, al))
		zm &= al.zoneMask
		cm &= al.ctMask
		if len(al.reqs) > 0 {
			reqs = reqs.And(al.reqs)
		}
	}
	if zone >= 0 {
		zm &= 1 << uint(zone)
	}
	if zm == 0 || cm == 0 || reqs.Conflict() != "" {
		return false
	}
	// Only types cheaper than the pair can be part of a cheaper plan; by price, so the
	// first that holds a part is its cheapest.
	cands := s.pairBuf.cands[:0]
	compat.each(func(i int) bool {
		if pr, _ := p.types[i].price(zm, cm); pr >= 0 && pr < cur {
			cands = append(cands, pairCand{i, pr})
		}
		return true
	})
	s.pairBuf.cands = cands
	if len(cands) == 0 {
		return false
	}
	sort.SliceStable(cands, func(x, y int) bool { return cands[x].price < cands[y].price })
	costOf := func(u resVec) float64 {
		for _, c := range cands {
			if lessEq(u, p.types[c.i].alloc) {
				return c.price
			}
		}
		return -1
	}
	if c1 := costOf(used); c1 >= 0 && c1 < cur*(1-1e-9) {
		return s.applyPair(a, b, both, nil, cur, zone)
	}
	// Pods largest first by their dominant share of the largest candidate type.
	// No re-split onto two nodes of the candidate types can cost less than the pair's pods at
	// the candidates' cheapest price per unit of any one resource (the two nodes' allocatable
	// together covers the pods' use): when that is not below the pair's price, no split pays.
	if splitFloor(used, cands, p) >= cur*(1-1e-9) {
		s.tally.pairsFloored++
		return false
	}
	ref := s.d.zero()
	for _, c := range cands {
		for r, v := range p.types[c.i].alloc {
			ref[r] = max(ref[r], v)
		}
	}
	pb := &s.pairBuf
	order := slices.Grow(pb.order[:0], len(both.pods))[:len(both.pods)]
	share := slices.Grow(pb.share[:0], len(both.pods))[:len(both.pods)]
	pb.order, pb.share = order, share
	clear(share)
	for i := range both.pods {
		order[i] = i
		for r, v := range both.cls[i].req {
			if ref[r] > 0 {
				share[i] = max(share[i], float64(v)/float64(ref[r]))
			}
		}
	}
	sort.SliceStable(order, func(x, y int) bool { return share[order[x]] > share[order[y]] })
	byClass := s.splitBuf.byClass(both, order)
	step := max(1, len(cands)/pairTypes)
	best, bestA := cur*(1-1e-9), []bool(nil)
	// Both parts go on candidate types, so part B is at least what part A's type t leaves of
	// the pair's use and part A at least what the largest candidate leaves: when those two
	// cheapest covers already cost best, no split filled to t beats it.
	over, rest := pb.over(s.d.zero), pb.rest(s.d.zero)
	for r := range used {
		over[r] = max(0, used[r]-ref[r])
	}
	floorA := costOf(over)
	for ti := len(cands) - 1; ti >= 0; ti -= step {
		t := p.types[cands[ti].i]
		for r := range used {
			rest[r] = max(0, used[r]-t.alloc[r])
		}
		if s.noPairTypeFloor {
			// (tests: every candidate type's splits priced)
		} else if cb := costOf(rest); floorA < 0 || cb < 0 || floorA+cb >= best {
			s.tally.pairTypesFloored++
			continue
		}
		for _, sp := range s.splits(both, order, byClass, t.alloc) {
			ca := costOf(sp.usedA)
			if ca < 0 || ca >= best {
				continue
			}
			if cb := costOf(sp.usedB); cb >= 0 && ca+cb < best {
				best, bestA = ca+cb, slices.Clone(sp.inA)
			}
		}
	}
	if bestA == nil {
		return false
	}
	return s.applyPair(a, b, both, bestA, cur, zone)
}

// nodePrice is the price of a planned node's cheapest option.
func (s *solver) nodePrice(n *node) float64 {
	pr, _ := n.pool.types[n.cheap].price(n.zoneMask, n.ctMask)
	return pr
}

// applyPair puts the pods of both marked in inA on a and the rest on b (all on a when inA is
// nil), reshapes the two nodes and keeps the change only if they now cost less than cur.
func (s *solver) applyPair(a, b, both *node, inA []bool, cur float64, zone int) bool {
	oldA, oldB := *a, *b
	if zone >= 0 {
		a.zone, b.zone = zone, zone
	}
	nA := len(both.pods)
	if inA != nil {
		nA = 0
		for _, in := range inA {
			if in {
				nA++
			}
		}
	}
	nB := len(both.pods) - nA
	// The two nodes are filled in scratch buffers first: most re-splits priced cheaper do not
	// survive the reshape (the nodes' own masks and requirements) and are undone; one that does
	// gets its own copies below.
	pb := &s.pairBuf
	a.pods, a.cls = slices.Grow(pb.podsA[:0], nA), slices.Grow(pb.clsA[:0], nA)
	b.pods, b.cls = slices.Grow(pb.podsB[:0], nB), slices.Grow(pb.clsB[:0], nB)
	a.used, b.used = zeroed(&pb.usedA, s.d.n()), zeroed(&pb.usedB, s.d.n())
	for i, pd := range both.pods {
		c := both.cls[i]
		n := b
		if inA == nil || inA[i] {
			n = a
		}
		n.pods, n.cls = append(n.pods, pd), append(n.cls, c)
		n.used.add(c.req)
	}
	pb.podsA, pb.clsA, pb.podsB, pb.clsB = a.pods, a.cls, b.pods, b.cls
	own := func(n *node, used resVec) {
		if len(n.pods) == 0 {
			n.pods, n.cls = nil, nil
		} else {
			n.pods, n.cls = slices.Clone(n.pods), slices.Clone(n.cls)
		}
		if &n.used[0] == &used[0] {
			n.used = used.clone()
		}
	}
	a.ports, b.ports = nil, nil
	a.reqs, b.reqs = a.pool.reqs, b.pool.reqs
	s.reshape(a)
	s.reshape(b)
	after := 0.0
	for _, n := range []*node{a, b} {
		if len(n.pods) == 0 {
			continue
		}
		if n.cheap < 0 || !lessEq(n.used, n.pool.types[n.cheap].alloc) {
			after = cur
			break
		}
		after += s.nodePrice(n)
	}
	if after >= cur*(1-1e-9) {
		*a, *b = oldA, oldB
		s.tally.pairsUndone++
		return false
	}
	s.tally.pairsKept++
	own(a, pb.usedA)
	own(b, pb.usedB)
	return true
}

// pairCand is a candidate type of a pair's re-split and its price under the pair's masks.
type pairCand struct {
	i     int
	price float64
}

// splitFloor is a lower bound on any set of nodes of the candidate types whose allocatable
// together covers used: for each resource, used at the candidates' cheapest price per unit of it.
func splitFloor(used resVec, cands []pairCand, p *pool) float64 {
	floor := 0.0
	for r, v := range used {
		if v <= 0 {
			continue
		}
		per := math.Inf(1)
		for _, c := range cands {
			if a := p.types[c.i].alloc[r]; a > 0 {
				per = min(per, c.price/float64(a))
			}
		}
		if math.IsInf(per, 1) {
			return math.Inf(1)
		}
		floor = max(floor, per*float64(v))
	}
	return floor
}

// zeroed returns *buf resized to n and zeroed (kept in *buf for the next call).
func zeroed(buf *resVec, n int) resVec {
	v := slices.Grow((*buf)[:0], n)[:n]
	clear(v)
	*buf = v
	return v
}
