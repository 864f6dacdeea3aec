package solver

import (
	"math/bits"

	corev1 "k8s.io/api/core/v1"
)

// repackFree reports whether pods of c can be taken off their planned nodes and placed again
// without touching any topology count, port or preference: no spread, affinity or anti-affinity
// (its own or a term counting it), no host ports, no volumes, nothing to relax, one alternative.
func (s *solver) repackFree(c *class) bool {
	if c.err != "" || !s.nothingToRelax(c) || len(c.memberOf) > 0 || len(c.repelledBy) > 0 ||
		len(c.hardSpread) > 0 || len(c.softSpread) > 0 || len(c.hardAff) > 0 || len(c.softAff) > 0 ||
		len(c.hardAnti) > 0 || len(c.softAnti) > 0 || len(c.ports) > 0 || len(c.volZones) > 0 ||
		c.zoneRelevant || !s.zoneFree(c) {
		return false
	}
	e := s.effAt(c, 0)
	return len(e.alts) == 1 && e.alts[0].conflict == ""
}

// nothingToRelax reports whether c has no preference that could change where it goes: its only
// step is avoiding PreferNoSchedule taints, and no pool has any.
func (s *solver) nothingToRelax(c *class) bool {
	for _, st := range c.steps {
		if st.kind != stepPreferTaints {
			return false
		}
	}
	for _, p := range s.pools {
		if len(p.preferTaints) > 0 {
			return false
		}
	}
	return true
}

// planCost is the summed price of the planned nodes' cheapest options.
func (s *solver) planCost() float64 {
	total := 0.0
	for _, n := range s.open {
		if len(n.pods) > 0 && n.cheap >= 0 {
			pr, _ := n.pool.types[n.cheap].price(n.zoneMask, n.ctMask)
			total += pr
		}
	}
	return total
}

// repack re-places the free pods (repackFree) of a plan: it takes them off every planned node,
// shrinks each node to what its remaining pods need (dropping an architecture, zone or capacity
// type only the removed pods asked for), fills the room the remaining pods leave, then packs
// what is left onto new nodes, each of the type that packs its pods best for the price. Placing
// classes largest first sizes nodes for whatever mix arrived first, so nodes pinned to a dearer
// zone or architecture carried free pods at their price and many nodes were full on cpu with
// memory to spare (or the reverse); here the constrained pods are sized first and free pods are
// chosen to balance each node's resources (the dot-product heuristic for vector bin packing).
// The result is kept only if the plan got cheaper. It runs for a single NodePool without limits
// or minValues, where any free pod may go on any node whose requirements admit it.
func (s *solver) repack() {
	if len(s.pools) != 1 {
		return
	}
	p := s.pools[0]
	if p.limited || len(p.minValues) > 0 {
		return
	}
	var free []*class
	isFree := map[*class]bool{}
	for _, c := range s.classes {
		if _, bad := untolerated(c.tols, p.taints); !bad && s.repackFree(c) {
			free = append(free, c)
			isFree[c] = true
		}
	}
	if len(free) == 0 {
		return
	}
	before := s.planCost()
	snap := s.snapshot(free)

	removed := map[*class][]*corev1.Pod{}
	moved := false
	for _, n := range s.open {
		if n.maxAlloc == nil { // made by a split
			s.refreshAlloc(n)
		}
		if len(n.pods) == 0 {
			continue
		}
		var pods []*corev1.Pod
		var cls []*class
		used := n.used.clone()
		for i, c := range n.cls {
			if isFree[c] {
				removed[c] = append(removed[c], n.pods[i])
				used.sub(c.req)
				continue
			}
			pods, cls = append(pods, n.pods[i]), append(cls, c)
		}
		if len(pods) == len(n.pods) {
			continue
		}
		moved = true
		n.pods, n.cls, n.used = pods, cls, used
		s.reshape(n)
	}
	if !moved {
		return
	}
	left := 0
	for _, c := range free {
		c.pods, c.next, c.curTag, c.level = removed[c], 0, -1, 0
		left += len(c.pods)
	}
	for _, n := range s.open {
		if len(n.pods) > 0 && n.cheap >= 0 {
			left -= s.fillRoom(n, free)
		}
	}
	// Classes that cannot use the type worth most per dollar (another architecture, say) get
	// their nodes first, and the room those leave is filled with pods free to go anywhere.
	bestType := -1
	bestRate := 0.0
	for i, t := range p.types {
		if r := s.value(t) / t.minPrice; t.minPrice > 0 && (bestType < 0 || r > bestRate*(1+1e-9)) {
			bestType, bestRate = i, r
		}
	}
	var restricted []*class
	for _, c := range free {
		if bestType >= 0 && !s.compat(p, s.effAt(c, 0).alts[0]).has(bestType) {
			restricted = append(restricted, c)
		}
	}
	for left > 0 {
		n, k := s.packNew(p, restricted)
		if n != nil {
			k += s.fillRoom(n, free)
		} else {
			_, k = s.packNew(p, free)
		}
		if k == 0 {
			break
		}
		left -= k
	}
	if left == 0 {
		s.improve()
	}
	if left > 0 || s.planCost() >= before*(1-1e-9) {
		s.restore(snap)
	}
}

type nodeSnap struct {
	open, nodes, firstLive int
	saved                  []node
	pods                   map[*class][]*corev1.Pod
	next                   map[*class]int
}

func (s *solver) snapshot(free []*class) nodeSnap {
	sn := nodeSnap{open: len(s.open), nodes: len(s.nodes), firstLive: s.firstLive,
		pods: map[*class][]*corev1.Pod{}, next: map[*class]int{}}
	for _, n := range s.open {
		c := *n
		c.pods = append([]*corev1.Pod(nil), n.pods...)
		c.cls = append([]*class(nil), n.cls...)
		c.ports = append([]hostPort(nil), n.ports...)
		c.used = n.used.clone()
		sn.saved = append(sn.saved, c)
	}
	for _, c := range free {
		sn.pods[c], sn.next[c] = c.pods, c.next
	}
	return sn
}

// restore undoes repack. Hostname counts that its improve pass moved are not restored: nothing
// reads them after the improvement passes.
func (s *solver) restore(sn nodeSnap) {
	s.open, s.nodes, s.firstLive = s.open[:sn.open], s.nodes[:sn.nodes], sn.firstLive
	for i, n := range s.open {
		*n = sn.saved[i]
	}
	for c, pods := range sn.pods {
		c.pods, c.next = pods, sn.next[c]
	}
}

// dotScore rates how well a pod of req fills the room rem of a type with allocatable alloc: the
// dot product of the two, each as a share of alloc. Higher packs the scarcer resources first.
func dotScore(req, rem, alloc resVec) float64 {
	v := 0.0
	for r, q := range req {
		if q > 0 && alloc[r] > 0 {
			v += float64(q) / float64(alloc[r]) * float64(rem[r]) / float64(alloc[r])
		}
	}
	return v
}

// fillRoom places free pods into the room n's cheapest type has left, best-balancing first; it
// returns how many it placed.
func (s *solver) fillRoom(n *node, free []*class) int {
	placed := 0
	skip := map[*class]bool{}
	for {
		alloc := n.pool.types[n.cheap].alloc
		rem := alloc.clone()
		rem.sub(n.used)
		var best *class
		bestScore := -1.0
		for _, c := range free {
			if skip[c] || c.next >= len(c.pods) || !fitsIn(n.used, c.req, alloc) {
				continue
			}
			if sc := dotScore(c.req, rem, alloc); sc > bestScore {
				best, bestScore = c, sc
			}
		}
		if best == nil {
			return placed
		}
		e := s.effAt(best, 0)
		mv, _ := s.prepareNew(best, e, e.alts[0], n, 1, true)
		if mv == nil {
			skip[best] = true
			continue
		}
		at := s.commitMove(best, mv)
		if at.k == 0 {
			skip[best] = true
			continue
		}
		best.next += at.k
		placed += at.k
	}
}

// freeFill is a simulated packing of free pods onto one node of a type.
type freeFill struct {
	t      int
	counts []int
	used   resVec
	reqs   reqSet
	zm, cm uint64
	n      int
}

// packNew opens one node for the free pods left: it simulates filling each candidate type
// (best-balancing pod first) and keeps the type whose pods are worth most per dollar at the
// resource prices. It returns the node and how many pods it placed.
func (s *solver) packNew(p *pool, free []*class) (*node, int) {
	var best *freeFill
	bestEff := 0.0
	for ti, t := range p.types {
		f := s.simulateFill(p, ti, free)
		if f == nil {
			continue
		}
		pr, _ := t.price(f.zm, f.cm)
		if pr <= 0 {
			continue
		}
		v := 0.0
		for r, q := range f.used {
			v += float64(q) * s.w[r]
		}
		if v <= 0 {
			v = float64(f.n) * 1e-12
		}
		if eff := v / pr; best == nil || eff > bestEff*(1+1e-9) {
			best, bestEff = f, eff
		}
	}
	if best == nil {
		return nil, 0
	}
	n := &node{id: len(s.nodes), name: "new-" + itoa(len(s.open)), pool: p, zone: -1,
		used: best.used, reqs: best.reqs, zoneMask: best.zm, ctMask: best.cm}
	if bits.OnesCount64(best.zm) == 1 {
		n.zone = bits.TrailingZeros64(best.zm)
	}
	n.options = newBitset(len(p.types))
	for i, t := range p.types {
		if lessEq(n.used, t.alloc) && t.zonesFor(n.zoneMask, n.ctMask) != 0 && typeAdmits(p, t, n.reqs, s.zones, s.cts) {
			n.options.set(i)
		}
	}
	n.cheap = cheapest(p, n.options, n.zoneMask, n.ctMask)
	if n.cheap < 0 {
		return nil, 0
	}
	for i, c := range free {
		if k := best.counts[i]; k > 0 {
			s.assign(c, n, k)
			c.next += k
		}
	}
	s.refreshAlloc(n)
	s.nodes = append(s.nodes, n)
	s.open = append(s.open, n)
	return n, best.n
}

// simulateFill packs the free pods left onto one node of type ti, best-balancing pod first,
// keeping the node's requirements consistent; nil if no pod fits.
func (s *solver) simulateFill(p *pool, ti int, free []*class) *freeFill {
	t := p.types[ti]
	f := &freeFill{t: ti, counts: make([]int, len(free)), used: s.d.zero(), reqs: p.reqs, zm: p.zoneMask, cm: p.ctMask}
	ok := make([]bool, len(free))
	for i, c := range free {
		if c.next >= len(c.pods) {
			continue
		}
		a := s.effAt(c, 0).alts[0]
		ok[i] = s.compat(p, a).has(ti) && lessEq(c.req, t.alloc)
	}
	for {
		rem := t.alloc.clone()
		rem.sub(f.used)
		bi, bestScore := -1, -1.0
		for i, c := range free {
			if !ok[i] || f.counts[i] >= len(c.pods)-c.next || !fitsIn(f.used, c.req, t.alloc) {
				continue
			}
			if sc := dotScore(c.req, rem, t.alloc); sc > bestScore {
				bi, bestScore = i, sc
			}
		}
		if bi < 0 {
			break
		}
		c := free[bi]
		if f.counts[bi] == 0 {
			a := s.effAt(c, 0).alts[0]
			reqs := f.reqs
			if len(a.reqs) > 0 {
				reqs = f.reqs.and(a.reqs)
			}
			zm, cm := f.zm&a.zoneMask, f.cm&a.ctMask
			if reqs.conflict() != "" || t.zonesFor(zm, cm) == 0 || !typeAdmits(p, t, reqs, s.zones, s.cts) {
				ok[bi] = false
				continue
			}
			f.reqs, f.zm, f.cm = reqs, zm, cm
		}
		f.used.add(c.req)
		f.counts[bi]++
		f.n++
	}
	if f.n == 0 {
		return nil
	}
	return f
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	pos := len(b)
	for i > 0 {
		pos--
		b[pos] = byte('0' + i%10)
		i /= 10
	}
	return string(b[pos:])
}

// reshape recomputes a planned node's requirements, options and cheapest type after pods left it.
func (s *solver) reshape(n *node) {
	p := n.pool
	if len(n.pods) == 0 {
		n.dead, n.cheap, n.options = true, -1, newBitset(len(p.types))
		n.used, n.maxAlloc = s.d.zero(), s.d.zero()
		n.ver++
		return
	}
	old := *n
	// Requirements from the pool and the remaining pods, when each has one alternative.
	reqs, zm, cm, ok := p.reqs, p.zoneMask, p.ctMask, true
	pinned := false
	seen := map[*class]bool{}
	for _, c := range n.cls {
		if seen[c] {
			continue
		}
		seen[c] = true
		if !s.zoneFree(c) {
			pinned = true
		}
		e := s.effAt(c, len(c.steps))
		if !s.nothingToRelax(c) || len(e.alts) != 1 {
			ok = false
			break
		}
		a := e.alts[0]
		reqs = reqs.and(a.reqs)
		zm &= a.zoneMask
		cm &= a.ctMask
	}
	if ok && reqs.conflict() == "" && zm != 0 && cm != 0 {
		if pinned && n.zone >= 0 {
			zm &= 1 << uint(n.zone)
		} else if !pinned {
			n.zone = -1
			if bits.OnesCount64(zm) == 1 {
				n.zone = bits.TrailingZeros64(zm)
			}
		}
		if zm != 0 {
			n.reqs, n.zoneMask, n.ctMask = reqs, zm, cm
		}
	}
	options := func() bitset {
		opts := newBitset(len(p.types))
		for i, t := range p.types {
			if lessEq(n.used, t.alloc) && t.zonesFor(n.zoneMask, n.ctMask) != 0 && typeAdmits(p, t, n.reqs, s.zones, s.cts) {
				opts.set(i)
			}
		}
		return opts
	}
	opts := options()
	if opts.empty() {
		n.reqs, n.zoneMask, n.ctMask, n.zone = old.reqs, old.zoneMask, old.ctMask, old.zone
		opts = options()
	}
	if !opts.empty() {
		n.options = opts
		n.cheap = cheapest(p, opts, n.zoneMask, n.ctMask)
	}
	s.refreshAlloc(n)
	n.ver++
}

// refreshAlloc recomputes the largest allocatable among a node's options and whether it is full.
func (s *solver) refreshAlloc(n *node) {
	n.maxAlloc = s.d.zero()
	n.options.each(func(i int) bool {
		for r, v := range n.pool.types[i].alloc {
			n.maxAlloc[r] = max(n.maxAlloc[r], v)
		}
		return true
	})
	n.dead = false
	for r := range n.used {
		if s.minReq != nil && n.maxAlloc[r]-n.used[r] < s.minReq[r] {
			n.dead = true
		}
	}
}
