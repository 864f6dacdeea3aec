package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/requirements"
)

// drainMaxPods bounds the nodes drain tries to empty (small, cheap nodes are where rounding
// leaves waste; emptying a large node into others' room almost never works).
const drainMaxPods = 16

// roomState is a planned node as drain's dry run sees it after the pods it would receive.
type roomState struct {
	used   resVec
	reqs   requirements.Set
	zm, cm uint64
	cand   bitset
	cheap  int
	price  float64
}

// drainGrowTargets bounds the targets drain prices a growth on, per pod.
const drainGrowTargets = 48

// drain empties planned nodes whose movable pods all fit into the room other nodes of the pool
// have left: in a first pass without the receiving nodes changing type, in a second also onto
// nodes that grow to a larger type, as long as the growths together cost less than the emptied
// node, so the plan only gets cheaper. Rounding the LP and packing greedily both leave a tail of small, part-empty
// nodes; this is the "merge two nodes into one cheaper" move, many at a time.
func (s *solver) drain() {
	if s.minReq == nil {
		return
	}
	for _, grow := range []bool{false, true} {
		for _, p := range s.pools {
			if len(p.minValues) == 0 {
				s.withinLimits(p, func() { s.drainPool(p, grow) })
			}
		}
	}
}

func (s *solver) drainPool(p *pool, grow bool) {
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
	var targets []*node // reused: drainPlan keeps no reference
	for _, n := range nodes {
		if len(n.pods) == 0 || len(n.pods) > drainMaxPods || n.cheap < 0 || !s.allMovable(n, kind) {
			continue
		}
		// Targets: other nodes of the pool with room for the smallest pod; the fullest first so
		// the room that is left stays in few nodes.
		targets = targets[:0]
		for _, m := range nodes {
			if m != n && len(m.pods) > 0 && m.cheap >= 0 && fitsIn(m.used, s.minReq, p.types[m.cheap].alloc) {
				targets = append(targets, m)
			}
		}
		plan, ok := s.drainPlan(n, targets, kind, grow)
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

// drainPlan finds, for every pod of n, a target: one whose cheapest type still holds it under
// requirements that admit it, or else the target whose growth to a larger admitted type costs
// least; false if a pod finds none or the growths cost as much as n.
func (s *solver) drainPlan(n *node, targets []*node, kind map[*class]int, grow bool) ([]*node, bool) {
	p := n.pool
	budget, _ := p.types[n.cheap].price(n.zoneMask, n.ctMask)
	state := map[*node]*roomState{}
	get := func(m *node) *roomState {
		if st := state[m]; st != nil {
			return st
		}
		pr, _ := p.types[m.cheap].price(m.zoneMask, m.ctMask)
		return &roomState{used: m.used, reqs: m.reqs, zm: m.zoneMask, cm: m.ctMask, cand: m.options, cheap: m.cheap, price: pr}
	}
	// admit narrows st by c's requirements (nil if they conflict or leave no zone).
	admit := func(st *roomState, c *class) (requirements.Set, bitset, uint64, uint64, bool) {
		a := s.effAt(c, 0).alts[0]
		zm, cm := st.zm&a.zoneMask, st.cm&a.ctMask
		if zm == 0 || cm == 0 {
			return nil, nil, 0, 0, false
		}
		reqs, cand := st.reqs, st.cand
		if len(a.reqs) > 0 {
			if reqs = reqs.And(a.reqs); reqs.Conflict() != "" {
				return nil, nil, 0, 0, false
			}
			cand = cand.and(s.compat(p, a))
		}
		return reqs, cand, zm, cm, true
	}
	plan := make([]*node, len(n.pods))
	extra := 0.0
	for i, c := range n.cls {
		zoneOK := func(m *node) bool { return kind[c] != zoneLocked || m.zone == n.zone }
		for _, m := range targets {
			if !zoneOK(m) {
				continue
			}
			st := get(m)
			t := p.types[st.cheap]
			if !fitsIn(st.used, c.req, t.alloc) {
				continue
			}
			reqs, cand, zm, cm, ok := admit(st, c)
			if !ok || t.zonesFor(zm, cm) == 0 || !cand.has(st.cheap) {
				continue
			}
			used := st.used.clone()
			used.add(c.req)
			state[m] = &roomState{used: used, reqs: reqs, zm: zm, cm: cm, cand: cand, cheap: st.cheap, price: st.price}
			plan[i] = m
			break
		}
		if plan[i] != nil {
			continue
		}
		if !grow {
			return nil, false
		}
		var best *roomState
		bestExtra := 0.0
		tried := 0
		for _, m := range targets {
			if tried >= drainGrowTargets {
				break
			}
			if !zoneOK(m) {
				continue
			}
			tried++
			st := get(m)
			reqs, cand, zm, cm, ok := admit(st, c)
			if !ok {
				continue
			}
			used := st.used.clone()
			used.add(c.req)
			// The cheapest of the candidate types that hold used in zm, cm (cheapest over
			// filter's set, in one pass); the set itself is built for the target kept only.
			fits := func(t *itype) bool { return t.zonesFor(zm, cm) != 0 && lessEq(used, t.alloc) }
			ci, pr := -1, 0.0
			cand.each(func(ti int) bool {
				if t := p.types[ti]; fits(t) {
					if tp, _ := t.price(zm, cm); tp >= 0 && (ci < 0 || tp < pr) {
						ci, pr = ti, tp
					}
				}
				return true
			})
			if ci < 0 {
				continue
			}
			if d := pr - st.price; best == nil || d < bestExtra {
				opts := s.filter(cand, fits, p.types)
				best, bestExtra = &roomState{used: used, reqs: reqs, zm: zm, cm: cm, cand: opts, cheap: ci, price: pr}, d
				plan[i] = m
			}
		}
		if best == nil {
			return nil, false
		}
		state[plan[i]] = best
		if extra += bestExtra; extra >= budget*(1-1e-9) {
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
		if !s.tryGrow(it, plan[i]) {
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

// tryGrow puts one pod of it on n if n's requirements admit it, letting n move to the cheapest
// admitted type that holds it (the same type when it still fits).
func (s *solver) tryGrow(it *item, n *node) bool {
	p, c := n.pool, it.c
	a := s.effAt(c, 0).alts[0]
	zm, cm := n.zoneMask&a.zoneMask, n.ctMask&a.ctMask
	if zm == 0 || cm == 0 || n.cheap < 0 {
		return false
	}
	reqs, cand := n.reqs, n.options
	if len(a.reqs) > 0 {
		if reqs = n.reqs.And(a.reqs); reqs.Conflict() != "" {
			return false
		}
		cand = cand.and(s.compat(p, a))
	}
	cand = s.filter(cand, func(t *itype) bool { return t.zonesFor(zm, cm) != 0 }, p.types)
	ok := false
	s.withItem(it, func() { ok, _, _ = s.commitNew(c, n, 1, cand, reqs, zm, cm, n.zone) })
	if ok {
		it.next++
	}
	return ok
}
