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
func (s *solver) improve() {
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
	for i := 0; i < len(s.open); i++ {
		n := s.open[i]
		if len(n.pods) < 2 {
			continue
		}
		ok := true
		for _, c := range n.cls {
			ok = ok && splittable(c)
		}
		for ok && s.split(n) {
		}
	}
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
func (s *solver) split(n *node) bool {
	p := n.pool
	compat := newBitset(len(p.types))
	for i, t := range p.types {
		if t.zonesFor(n.zoneMask, n.ctMask) != 0 && typeAdmits(p, t, n.reqs, s.zones, s.cts) {
			compat.set(i)
		}
	}
	cur, ci := s.nodeCost(n, compat, n.used)
	if ci < 0 {
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
	var cheaper []int
	compat.each(func(i int) bool {
		if pr, _ := p.types[i].price(n.zoneMask, n.ctMask); pr >= 0 && pr < cur {
			cheaper = append(cheaper, i)
		}
		return true
	})
	if len(cheaper) == 0 {
		return false
	}
	step := max(1, len(cheaper)/splitCandidates)
	bestCost, bestA := cur-1e-9, []bool(nil)
	var bestUsedA, bestUsedB resVec
	for ti := len(cheaper) - 1; ti >= 0; ti -= step {
		t := p.types[cheaper[ti]]
		inA := make([]bool, len(n.pods))
		usedA, usedB := s.d.zero(), s.d.zero()
		var portsA []hostPort
		countA := 0
		for _, i := range order {
			c := n.cls[i]
			if fitsIn(usedA, c.req, t.alloc) && (len(c.ports) == 0 || portsFree(portsA, c.ports)) {
				usedA.add(c.req)
				portsA = append(portsA, c.ports...)
				inA[i] = true
				countA++
			} else {
				usedB.add(c.req)
			}
		}
		if countA == 0 || countA == len(n.pods) {
			continue
		}
		ca, ai := s.nodeCost(n, compat, usedA)
		cb, bi := s.nodeCost(n, compat, usedB)
		if ai < 0 || bi < 0 {
			continue
		}
		if p.limited {
			extra := p.types[ai].capacity.clone()
			extra.add(p.types[bi].capacity)
			extra.sub(n.commit)
			slack := p.remaining.clone()
			slack.sub(p.committed)
			if !lessEq(extra, slack) {
				continue
			}
		}
		if ca+cb < bestCost {
			bestCost, bestA, bestUsedA, bestUsedB = ca+cb, inA, usedA, usedB
		}
	}
	if bestA == nil {
		return false
	}
	b := &node{id: len(s.nodes), name: fmt.Sprintf("new-%d", len(s.open)), pool: p, zone: n.zone, cheap: -1,
		reqs: n.reqs, zoneMask: n.zoneMask, ctMask: n.ctMask}
	var podsA, podsB []*corev1.Pod
	var clsA, clsB []*class
	var portsA, portsB []hostPort
	for i, pd := range n.pods {
		if bestA[i] {
			podsA, clsA, portsA = append(podsA, pd), append(clsA, n.cls[i]), append(portsA, n.cls[i].ports...)
		} else {
			podsB, clsB, portsB = append(podsB, pd), append(clsB, n.cls[i]), append(portsB, n.cls[i].ports...)
		}
	}
	optsA := s.filter(compat, func(t *itype) bool { return lessEq(bestUsedA, t.alloc) }, p.types)
	optsB := s.filter(compat, func(t *itype) bool { return lessEq(bestUsedB, t.alloc) }, p.types)
	if s.minValuesMsg(p, optsA, n.reqs, n.zoneMask, n.ctMask) != "" || s.minValuesMsg(p, optsB, n.reqs, n.zoneMask, n.ctMask) != "" {
		return false
	}
	n.pods, n.cls, n.ports, n.used, n.options = podsA, clsA, portsA, bestUsedA, optsA
	b.pods, b.cls, b.ports, b.used, b.options = podsB, clsB, portsB, bestUsedB, optsB
	n.cheap, b.cheap = cheapest(p, optsA, n.zoneMask, n.ctMask), cheapest(p, optsB, b.zoneMask, b.ctMask)
	if p.limited {
		p.committed.sub(n.commit)
		n.commit, b.commit = p.types[n.cheap].capacity, p.types[b.cheap].capacity
		p.committed.add(n.commit)
		p.committed.add(b.commit)
	}
	// Hostname counts move with the pods so later checks and reports stay consistent.
	for i, c := range clsB {
		_ = i
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
