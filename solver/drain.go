package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// drainMaxPods bounds the nodes drain tries to empty (small, cheap nodes are where rounding
// leaves waste; emptying a large node into others' room almost never works).
const drainMaxPods = 16

// roomState is a planned node as drain's dry run sees it after the pods it would receive.
type roomState struct {
	used   resVec
	reqs   reqSet
	zm, cm uint64
	cand   bitset
}

// drain empties planned nodes whose movable pods all fit into the room other nodes of the pool
// have left, without any of those nodes changing type: each emptied node's price is saved
// outright, so the plan only gets cheaper. Rounding the LP and packing greedily both leave a
// tail of small, part-empty nodes; this is the "merge two nodes into one" move, many at a time.
func (s *solver) drain() {
	if s.minReq == nil {
		return
	}
	for _, p := range s.pools {
		if !p.limited && len(p.minValues) == 0 {
			s.drainPool(p)
		}
	}
}

func (s *solver) drainPool(p *pool) {
	kind := map[*class]int{}
	for _, c := range s.classes {
		kind[c] = s.movable(c, p)
	}
	price := func(n *node) float64 {
		pr, _ := p.types[n.cheap].price(n.zoneMask, n.ctMask)
		return pr
	}
	var nodes []*node
	for _, n := range s.open {
		if n.pool == p && len(n.pods) > 0 && n.cheap >= 0 {
			nodes = append(nodes, n)
		}
	}
	sort.SliceStable(nodes, func(a, b int) bool { return price(nodes[a]) < price(nodes[b]) })
	for _, n := range nodes {
		if len(n.pods) == 0 || len(n.pods) > drainMaxPods || n.cheap < 0 || !s.allMovable(n, kind) {
			continue
		}
		// Targets: other nodes of the pool with room for the smallest pod; the fullest first so
		// the room that is left stays in few nodes.
		var targets []*node
		for _, m := range nodes {
			if m != n && len(m.pods) > 0 && m.cheap >= 0 && fitsIn(m.used, s.minReq, p.types[m.cheap].alloc) {
				targets = append(targets, m)
			}
		}
		plan, ok := s.drainPlan(n, targets, kind)
		if !ok {
			continue
		}
		s.applyDrain(n, plan)
	}
}

func (s *solver) allMovable(n *node, kind map[*class]int) bool {
	for _, c := range n.cls {
		if k := kind[c]; k == notMovable || (k == zoneLocked && n.zone < 0) {
			return false
		}
	}
	return true
}

// drainPlan finds, for every pod of n, a target with room under the target's cheapest type
// and requirements that admit it (as tryRoom will check), or reports false.
func (s *solver) drainPlan(n *node, targets []*node, kind map[*class]int) ([]*node, bool) {
	p := n.pool
	state := map[*node]*roomState{}
	plan := make([]*node, len(n.pods))
	for i, c := range n.cls {
		a := s.effAt(c, 0).alts[0]
		for _, m := range targets {
			if kind[c] == zoneLocked && m.zone != n.zone {
				continue
			}
			st := state[m]
			if st == nil {
				st = &roomState{used: m.used, reqs: m.reqs, zm: m.zoneMask, cm: m.ctMask, cand: m.options}
			}
			t := p.types[m.cheap]
			if !fitsIn(st.used, c.req, t.alloc) {
				continue
			}
			zm, cm := st.zm&a.zoneMask, st.cm&a.ctMask
			if zm == 0 || cm == 0 || t.zonesFor(zm, cm) == 0 {
				continue
			}
			reqs, cand := st.reqs, st.cand
			if len(a.reqs) > 0 {
				if reqs = reqs.and(a.reqs); reqs.conflict() != "" {
					continue
				}
				cand = cand.and(s.compat(p, a))
			}
			if !cand.has(m.cheap) {
				continue
			}
			used := st.used.clone()
			used.add(c.req)
			state[m] = &roomState{used: used, reqs: reqs, zm: zm, cm: cm, cand: cand}
			plan[i] = m
			break
		}
		if plan[i] == nil {
			return nil, false
		}
	}
	return plan, true
}

// applyDrain moves n's pods to their planned targets; a pod whose move fails stays on n.
func (s *solver) applyDrain(n *node, plan []*node) {
	var keepPods []*corev1.Pod
	var keepCls []*class
	used := n.used.clone()
	for i, pod := range n.pods {
		c := n.cls[i]
		zone := -1
		if len(c.memberOf) > 0 || len(c.volZones) > 0 || !s.zoneFree(c) {
			zone = n.zone
		}
		it := &item{c: c, zone: zone, pods: []*corev1.Pod{pod}}
		if !s.tryRoom(it, plan[i]) {
			keepPods, keepCls = append(keepPods, pod), append(keepCls, c)
			continue
		}
		used.sub(c.req)
		for _, g := range c.memberOf {
			g.add(n, -1)
		}
	}
	n.pods, n.cls, n.used = keepPods, keepCls, used
	n.ports = nil
	for _, c := range keepCls {
		n.ports = append(n.ports, c.ports...)
	}
	s.reshape(n)
}
