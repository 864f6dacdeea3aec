package solver

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// splitCandidates bounds how many smaller instance types a split tries per node.
const splitCandidates = 24

// improve is the post-pass over planned nodes. Shrinking is implicit: a node's options are
// exactly the types that still hold its pods, and the plan takes the cheapest of them. On top,
// each node is split in two when two smaller types hold its pods for less (first-fit packs
// nodes up to the largest type, which overshoots on the last node of a workload).
func (s *solver) improve(memo *passMemo) {
	unsafe := map[*group]bool{}
	for _, c := range s.classes {
		for _, t := range append(append([]*termRef(nil), c.hardAff...), c.softAff...) {
			if t.g.hostname {
				unsafe[t.g] = true
			}
		}
	}
	splittable := func(c *class) bool {
		for _, t := range append(append([]*termRef(nil), c.hardAff...), c.softAff...) {
			if t.g.hostname {
				return false
			}
		}
		for _, g := range c.memberOf {
			if unsafe[g] {
				return false
			}
		}
		return true
	}
	// Nodes holding the same pods under the same requirements split alike (the repack repeats
	// node patterns by the hundred): remember the contents no split improved.
	for i := 0; i < len(s.open); i++ {
		n := s.open[i]
		if len(n.pods) < 2 {
			continue
		}
		ok := true
		for _, c := range n.cls {
			ok = ok && splittable(c)
		}
		if !ok {
			continue
		}
		key := ""
		if !n.pool.limited {
			if key = contentKey(n, memo.rank); memo.unsplittable[key] {
				continue
			}
		}
		split := s.splitFree(n)
		for s.split(n, memo) {
			split = true
		}
		if !split && key != "" {
			memo.unsplittable[key] = true
		}
	}
}

// contentKey identifies a node's pods (as class counts), pool, zone and masks.
func contentKey(n *node, rank map[*class]int) string {
	counts := map[int]int{}
	var ids []int
	for _, c := range n.cls {
		r := rank[c]
		if counts[r] == 0 {
			ids = append(ids, r)
		}
		counts[r]++
	}
	sort.Ints(ids)
	b := make([]byte, 0, 16+8*len(ids))
	b = fmt.Appendf(b, "%d/%d/%x/%x", n.pool.idx, n.zone, n.zoneMask, n.ctMask)
	for _, id := range ids {
		b = fmt.Appendf(b, ",%d:%d", id, counts[id])
	}
	return string(b)
}

// zoneFree reports whether a class may land in any zone without affecting any zone count.
func (s *solver) zoneFree(c *class) bool {
	if c.zoneRelevant || len(c.volZones) > 0 {
		return false
	}
	for _, a := range s.effAt(c, len(c.steps)).alts {
		if a.zoneMask != ^uint64(0) {
			return false
		}
	}
	return !s.effAt(c, 0).zoneCons
}

// splitFree moves the zone-free pods off a node pinned to a dearer zone, onto a new node in the
// cheapest zone, when the two nodes cost less than the one.
func (s *solver) splitFree(n *node) bool {
	p := n.pool
	if n.zone < 0 || len(n.pods) < 2 {
		return false
	}
	inA := make([]bool, len(n.pods))
	usedA, usedB := s.d.zero(), s.d.zero()
	moved := 0
	for i, c := range n.cls {
		if s.zoneFree(c) {
			usedB.add(c.req)
			moved++
		} else {
			inA[i] = true
			usedA.add(c.req)
		}
	}
	if moved == 0 || moved == len(n.pods) {
		return false
	}
	freeMask := p.zoneMask
	compatA := newBitset(len(p.types))
	compatB := newBitset(len(p.types))
	for i, t := range p.types {
		if !typeAdmits(p, t, n.reqs, s.zones, s.cts) {
			continue
		}
		if t.zonesFor(n.zoneMask, n.ctMask) != 0 {
			compatA.set(i)
		}
		if t.zonesFor(freeMask, n.ctMask) != 0 {
			compatB.set(i)
		}
	}
	cur, ci := s.nodeCost(n, compatA, n.used)
	ca, ai := s.nodeCost(n, compatA, usedA)
	cb, bi := s.nodeCostMasks(p, compatB, usedB, freeMask, n.ctMask)
	if ci < 0 || ai < 0 || bi < 0 || ca+cb >= cur-1e-9 {
		return false
	}
	optsA := s.filter(compatA, func(t *itype) bool { return lessEq(usedA, t.alloc) }, p.types)
	optsB := s.filter(compatB, func(t *itype) bool { return lessEq(usedB, t.alloc) }, p.types)
	return s.applySplit(n, inA, usedA, usedB, optsA, optsB, -1, freeMask)
}

func (s *solver) nodeCostMasks(p *pool, compat bitset, used resVec, zm, cm uint64) (float64, int) {
	best, bi := -1.0, -1
	compat.each(func(i int) bool {
		t := p.types[i]
		if !lessEq(used, t.alloc) {
			return true
		}
		if pr, _ := t.price(zm, cm); pr >= 0 && (bi < 0 || pr < best) {
			best, bi = pr, i
		}
		return true
	})
	return best, bi
}

// nodeCost is the price of the cheapest option holding used, or -1.
func (s *solver) nodeCost(n *node, compat bitset, used resVec) (float64, int) {
	p := n.pool
	best, bi := -1.0, -1
	compat.each(func(i int) bool {
		t := p.types[i]
		if !lessEq(used, t.alloc) {
			return true
		}
		if pr, _ := t.price(n.zoneMask, n.ctMask); pr >= 0 && (bi < 0 || pr < best) {
			best, bi = pr, i
		}
		return true
	})
	return best, bi
}

// split moves part of n's pods to a new node when that lowers the cost; reports whether it did.
func (s *solver) split(n *node, memo *passMemo) bool {
	p := n.pool
	akey := fmt.Sprintf("%d/%x/%x/", p.idx, n.zoneMask, n.ctMask) + n.reqs.Signature()
	compat, ok := memo.admitted[akey]
	if !ok {
		compat = newBitset(len(p.types))
		for i, t := range p.types {
			if t.zonesFor(n.zoneMask, n.ctMask) != 0 && typeAdmits(p, t, n.reqs, s.zones, s.cts) {
				compat.set(i)
			}
		}
		memo.admitted[akey] = compat
	}
	// The compatible types by price (cheapest offering under the node's masks, index order among
	// equal prices): the first that holds a part is what nodeCost would pick, without scanning
	// every compatible type for each of the thousands of parts the pass prices.
	byPrice, ok := memo.byPrice[akey]
	if !ok {
		compat.each(func(i int) bool {
			if pr, _ := p.types[i].price(n.zoneMask, n.ctMask); pr >= 0 {
				byPrice = append(byPrice, pairCand{i, pr})
			}
			return true
		})
		sort.SliceStable(byPrice, func(x, y int) bool { return byPrice[x].price < byPrice[y].price })
		memo.byPrice[akey] = byPrice
	}
	nodeCost := func(used resVec) (float64, int) {
		for _, c := range byPrice {
			if lessEq(used, p.types[c.i].alloc) {
				return c.price, c.i
			}
		}
		return -1, -1
	}
	cur, ci := nodeCost(n.used)
	if ci < 0 {
		return false
	}
	// cheaper: the compatible types cheaper than the node's, by index (with their prices).
	cheaper := s.splitBuf.cands[:0]
	compat.each(func(i int) bool {
		if pr, _ := p.types[i].price(n.zoneMask, n.ctMask); pr >= 0 && pr < cur {
			cheaper = append(cheaper, pairCand{i, pr})
		}
		return true
	})
	s.splitBuf.cands = cheaper
	if len(cheaper) == 0 {
		return false
	}
	// Both parts of a split that pays are on types cheaper than the node's, so no split pays
	// when the node's pods cost at least its price at those types' cheapest price per unit.
	if splitFloor(n.used, cheaper, p) >= cur-1e-9 {
		s.tally.splitsFloored++
		return false
	}
	// Pods largest first by their dominant share of the current type.
	alloc := p.types[ci].alloc
	order := make([]int, len(n.pods))
	share := make([]float64, len(n.pods))
	for i := range n.pods {
		order[i] = i
		for r, v := range n.cls[i].req {
			if alloc[r] > 0 {
				share[i] = max(share[i], float64(v)/float64(alloc[r]))
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return share[order[a]] > share[order[b]] })
	step := max(1, len(cheaper)/splitCandidates)
	bestCost, bestA := cur-1e-9, []bool(nil)
	var bestUsedA, bestUsedB resVec
	// Pods by class, for the balancing fill (only without host ports).
	var byClass [][]int
	if len(n.ports) == 0 {
		byClass = s.splitBuf.byClass(n, order)
	}
	// Part A fills type t, so part B holds at least what t leaves of the node's use, and part A
	// costs at least the cheapest type: when those already cost bestCost, no split filled to t
	// beats it.
	rest := s.scratchVec(5)
	for ti := len(cheaper) - 1; ti >= 0; ti -= step {
		t := p.types[cheaper[ti].i]
		for r := range rest {
			rest[r] = max(0, n.used[r]-t.alloc[r])
		}
		if cb, _ := nodeCost(rest); !s.noPairTypeFloor && (cb < 0 || byPrice[0].price+cb >= bestCost) {
			s.tally.splitTypesFloored++
			continue
		}
		for _, sp := range s.splits(n, order, byClass, t.alloc) {
			ca, ai := nodeCost(sp.usedA)
			cb, bi := nodeCost(sp.usedB)
			if ai < 0 || bi < 0 {
				continue
			}
			if p.limited && !p.splitFits(ai, bi, n.commit) {
				continue
			}
			if ca+cb < bestCost {
				k := sp.keep()
				bestCost, bestA, bestUsedA, bestUsedB = ca+cb, k.inA, k.usedA, k.usedB
			}
		}
	}
	if bestA == nil {
		return false
	}
	optsA := s.filter(compat, func(t *itype) bool { return lessEq(bestUsedA, t.alloc) }, p.types)
	optsB := s.filter(compat, func(t *itype) bool { return lessEq(bestUsedB, t.alloc) }, p.types)
	return s.applySplit(n, bestA, bestUsedA, bestUsedB, optsA, optsB, n.zone, n.zoneMask)
}

// applySplit moves the pods not in inA to a new node b with the given options and zone.
func (s *solver) applySplit(n *node, inA []bool, usedA, usedB resVec, optsA, optsB bitset, bZone int, bZoneMask uint64) bool {
	p := n.pool
	if s.minValuesMsg(p, optsA, n.reqs, n.zoneMask, n.ctMask) != "" || s.minValuesMsg(p, optsB, n.reqs, bZoneMask, n.ctMask) != "" {
		return false
	}
	cheapA, cheapB := cheapest(p, optsA, n.zoneMask, n.ctMask), cheapest(p, optsB, bZoneMask, n.ctMask)
	if cheapA < 0 || cheapB < 0 {
		return false
	}
	if p.limited && !p.splitFits(cheapA, cheapB, n.commit) {
		return false
	}
	b := &node{id: len(s.nodes), name: fmt.Sprintf("new-%d", len(s.open)), pool: p, zone: bZone, cheap: cheapB,
		reqs: n.reqs, zoneMask: bZoneMask, ctMask: n.ctMask}
	var podsA, podsB []*corev1.Pod
	var clsA, clsB []*class
	var portsA, portsB []hostPort
	for i, pd := range n.pods {
		if inA[i] {
			podsA, clsA, portsA = append(podsA, pd), append(clsA, n.cls[i]), append(portsA, n.cls[i].ports...)
		} else {
			podsB, clsB, portsB = append(podsB, pd), append(clsB, n.cls[i]), append(portsB, n.cls[i].ports...)
		}
	}
	n.pods, n.cls, n.ports, n.used, n.options, n.cheap = podsA, clsA, portsA, usedA, optsA, cheapA
	b.pods, b.cls, b.ports, b.used, b.options = podsB, clsB, portsB, usedB, optsB
	if p.limited {
		if n.commit != nil {
			p.committed.sub(n.commit)
		}
		n.commit, b.commit = p.types[cheapA].capacity, p.types[cheapB].capacity
		p.committed.add(n.commit)
		p.committed.add(b.commit)
	}
	// Hostname counts move with the pods so later checks and reports stay consistent.
	for _, c := range clsB {
		for _, g := range c.memberOf {
			if g.hostname {
				g.nodeCnt[n.id]--
				g.add(b, 1)
				g.total--
			}
		}
		for _, t := range c.hardAnti {
			if t.g.hostname {
				t.g.nodeOwn[n.id]--
				t.g.addOwner(b, 1)
			}
		}
	}
	s.nodes = append(s.nodes, b)
	s.open = append(s.open, b)
	return true
}

// split is one way to divide a node's pods between two nodes: inA marks the first node's pods.
type split struct {
	inA          []bool
	usedA, usedB resVec
}

// splits are the ways of dividing n's pods so that the first part fits alloc: largest share first
// (order), and balanced across classes when there are several (byClass); each leaves both parts
// non-empty.
// The splits and their vectors live in s.splitBuf and hold until the next call; a caller that
// keeps one clones it (split.keep).
func (s *solver) splits(n *node, order []int, byClass [][]int, alloc resVec) []split {
	out := s.splitBuf.out[:0]
	add := func(inA []bool, usedA, usedB resVec, countA int) {
		if countA > 0 && countA < len(n.pods) {
			out = append(out, split{inA: inA, usedA: usedA, usedB: usedB})
		}
	}
	add(s.fillShare(n, order, alloc))
	if len(byClass) > 1 {
		add(s.fillBalanced(n, byClass, alloc))
	}
	return out
}

// fillShare fills part A of a split up to alloc with n's pods in the given order (first fit),
// keeping host ports apart; the rest is part B.
func (s *solver) fillShare(n *node, order []int, alloc resVec) ([]bool, resVec, resVec, int) {
	sb := &s.splitBuf
	inA := sb.bools(0, len(n.pods))
	usedA, usedB := s.scratchVec(0), s.scratchVec(1)
	portsA := sb.ports[:0]
	defer func() { sb.ports = portsA[:0] }()
	countA := 0
	for _, i := range order {
		c := n.cls[i]
		if fitsIn(usedA, c.req, alloc) && (len(c.ports) == 0 || portsFree(portsA, c.ports)) {
			usedA.add(c.req)
			portsA = append(portsA, c.ports...)
			inA[i] = true
			countA++
		} else {
			usedB.add(c.req)
		}
	}
	return inA, usedA, usedB, countA
}

// fillBalanced fills part A of a split up to alloc one pod at a time, taking the class whose
// request best fits the room left (fitScore), so A ends up full in every resource rather than
// in one; the rest is part B. byClass lists n's pod indices per class.
func (s *solver) fillBalanced(n *node, byClass [][]int, alloc resVec) ([]bool, resVec, resVec, int) {
	sb := &s.splitBuf
	inA := sb.bools(1, len(n.pods))
	usedA := s.scratchVec(2)
	taken := sb.ints(len(byClass))
	countA := 0
	rem := s.scratchVec(4)
	for {
		copy(rem, alloc)
		rem.sub(usedA)
		bk, bestScore, eligible := -1, -1.0, 0
		for k, idx := range byClass {
			if taken[k] >= len(idx) {
				continue
			}
			c := n.cls[idx[0]]
			if !fitsIn(usedA, c.req, alloc) {
				taken[k] = len(idx) // part A only fills up: a class that no longer fits is out for good
				continue
			}
			eligible++
			if sc := fitScore(c.req, rem, alloc); sc > bestScore {
				bk, bestScore = k, sc
			}
		}
		if bk < 0 {
			break
		}
		// With one class left that fits, the pod-by-pod fill would take it until it no longer
		// fits or runs out: take those pods at once.
		take := 1
		if eligible == 1 {
			take = max(1, fitCount(usedA, n.cls[byClass[bk][0]].req, alloc, len(byClass[bk])-taken[bk]))
		}
		for range take {
			i := byClass[bk][taken[bk]]
			taken[bk]++
			inA[i] = true
			usedA.add(n.cls[i].req)
			countA++
		}
	}
	usedB := s.scratchVec(3)
	copy(usedB, n.used)
	usedB.sub(usedA)
	return inA, usedA, usedB, countA
}
