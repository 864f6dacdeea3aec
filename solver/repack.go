package solver

import (
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// movable reports how repack may move pods of c: free (anywhere; no topology, ports, volumes or
// preferences), zoneLocked (between nodes of the zone they are in: zone spread or volumes only,
// so the per-zone counts do not change) or not at all.
func (s *solver) movable(c *class, p *pool) int {
	if c.err != "" || !s.nothingToRelax(c) || len(c.repelledBy) > 0 || len(c.hardAff) > 0 ||
		len(c.softAff) > 0 || len(c.hardAnti) > 0 || len(c.softAnti) > 0 || len(c.softSpread) > 0 ||
		len(c.ports) > 0 {
		return notMovable
	}
	if _, bad := untolerated(c.tols, p.taints); bad {
		return notMovable
	}
	e := s.effAt(c, 0)
	if len(e.alts) != 1 || e.alts[0].conflict != "" {
		return notMovable
	}
	for _, g := range c.memberOf {
		if g.hostname {
			return notMovable
		}
	}
	for _, sp := range c.hardSpread {
		if sp.g.hostname {
			return notMovable
		}
	}
	if len(c.memberOf) == 0 && len(c.hardSpread) == 0 && len(c.volZones) == 0 && !c.zoneRelevant && s.zoneFree(c) {
		return freeMove
	}
	return zoneLocked
}

const (
	notMovable = iota
	freeMove
	zoneLocked
)

// item is the pods of one class repack re-places; zone is -1 for free pods, else the zone they
// must stay in.
type item struct {
	c    *class
	zone int
	pods []*corev1.Pod
	next int
	// dual is the assignment LP's price of one more pod of the item (0 when no LP was solved):
	// what a pod is worth on a new node.
	dual float64
}

func (it *item) left() int { return len(it.pods) - it.next }

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
// chosen to balance each node's resources (fitScore, a vector bin-packing heuristic).
// The result is kept only if the plan got cheaper (and, for a pool with limits, still fits
// them: withinLimits). It runs per NodePool without minValues, where any free pod may go on any
// node whose requirements admit it.
// With useLP the new nodes start from the rounded assignment LP (lpPack).
func (s *solver) repack(topUp, useLP bool, memo *passMemo) {
	for _, p := range s.pools {
		if len(p.minValues) == 0 {
			s.withinLimits(p, func() { s.repackPool(p, topUp, useLP, memo) })
		}
	}
}

// repackPool is repack for the nodes of one pool: pods stay in the pool they were placed in.
func (s *solver) repackPool(p *pool, topUp, useLP bool, memo *passMemo) {
	kind := map[*class]int{}
	some := false
	for _, c := range s.classes {
		if k := s.movable(c, p); k != notMovable {
			kind[c] = k
			some = true
		}
	}
	if !some {
		return
	}
	before := s.planCost()
	snap := s.snapshot()

	type ikey struct {
		c    *class
		zone int
	}
	items := map[ikey]*item{}
	var order []*item
	for _, n := range s.open {
		if n.pool != p {
			continue
		}
		if n.maxAlloc == nil { // made by a split
			s.refreshAlloc(n)
		}
		if len(n.pods) == 0 {
			continue
		}
		var pods []*corev1.Pod
		var cls []*class
		var seed map[*class]int // the node's movable pods per class, a starting pattern
		used := n.used.clone()
		for i, c := range n.cls {
			k := kind[c]
			if k == notMovable || (k == zoneLocked && n.zone < 0) {
				pods, cls = append(pods, n.pods[i]), append(cls, c)
				continue
			}
			key := ikey{c, -1}
			if k == zoneLocked {
				key.zone = n.zone
				for _, g := range c.memberOf {
					g.add(n, -1)
				}
			}
			it := items[key]
			if it == nil {
				it = &item{c: c, zone: key.zone}
				items[key] = it
				order = append(order, it)
			}
			it.pods = append(it.pods, n.pods[i])
			used.sub(c.req)
			if seed == nil {
				seed = map[*class]int{}
			}
			seed[c]++
		}
		if seed != nil && n.cheap >= 0 && len(n.pods) > 0 {
			memo.seeds = append(memo.seeds, seedPattern{t: n.cheap, zone: n.zone, counts: seed})
		}
		if len(pods) == len(n.pods) {
			continue
		}
		n.pods, n.cls, n.used = pods, cls, used
		s.reshape(n)
	}
	defer func() { memo.seeds = memo.seeds[:0] }()
	if len(order) == 0 {
		return
	}
	// Items in class order (largest first), zone-locked ones by zone.
	rank := map[*class]int{}
	for i, c := range s.classes {
		rank[c] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		if a, b := rank[order[i].c], rank[order[j].c]; a != b {
			return a < b
		}
		return order[i].zone < order[j].zone
	})
	var free []*item
	zoned := make([][]*item, len(s.zones))
	for _, it := range order {
		if it.zone < 0 {
			free = append(free, it)
		} else {
			zoned[it.zone] = append(zoned[it.zone], it)
		}
	}
	for _, n := range s.open {
		if n.pool == p && len(n.pods) > 0 && n.cheap >= 0 {
			s.fillRoom(n, order)
		}
	}
	switch {
	case useLP && memo.patterns:
		s.patternPack(p, order, memo)
	case useLP:
		s.lpPack(p, order, memo)
	}
	// Zone-locked pods get nodes in their zone first, then pods that cannot use the type worth
	// most per dollar (another architecture, say), then the rest; the room each new node leaves
	// is filled with pods that may go there.
	bestType := -1
	bestRate := 0.0
	for i, t := range p.types {
		if r := s.value(t) / t.minPrice; t.minPrice > 0 && (bestType < 0 || r > bestRate*(1+1e-9)) {
			bestType, bestRate = i, r
		}
	}
	restrictedOf := func(its []*item) []*item {
		var out []*item
		for _, it := range its {
			if bestType >= 0 && !s.compat(p, s.effAt(it.c, 0).alts[0]).has(bestType) {
				out = append(out, it)
			}
		}
		return out
	}
	packAll := func(its, fillers []*item, zone int) {
		restricted := restrictedOf(its)
		isR := map[*item]bool{}
		for _, it := range restricted {
			isR[it] = true
		}
		first := append([]*item(nil), restricted...)
		for _, it := range its {
			if !isR[it] {
				first = append(first, it)
			}
		}
		first = append(first, fillers...)
		all := append(append([]*item(nil), its...), fillers...)
		second := all
		if !topUp {
			first, second = restricted, its
		}
		for {
			items := first
			n, f := s.packNew(p, first, len(restricted), zone, bestRate)
			if n == nil {
				items = second
				n, f = s.packNew(p, second, len(its), zone, bestRate)
			}
			if n == nil {
				return
			}
			s.fillRoom(n, all)
			// The same choice would be made again while every item it took has as many pods
			// left: repeat the node (the pattern) instead of re-simulating every type.
			for repeatable(f, items) {
				n = s.commitFill(p, f, items, zone)
				if n == nil {
					break
				}
				s.fillRoom(n, all)
			}
		}
	}
	for z, its := range zoned {
		if len(its) > 0 {
			packAll(its, free, z)
		}
	}
	packAll(free, nil, -1)
	left := 0
	for _, it := range order {
		left += it.left()
	}
	if left == 0 {
		s.improve(memo)
	}
	if left > 0 || s.planCost() >= before*(1-1e-9) {
		for _, it := range order {
			if it.zone >= 0 && it.left() > 0 {
				for _, g := range it.c.memberOf {
					g.zoneCnt[it.zone] += int32(it.left())
					g.total += int32(it.left())
				}
			}
		}
		s.restore(snap)
	}
}

type nodeSnap struct {
	open, nodes, firstLive int
	saved                  []node
}

func (s *solver) snapshot() nodeSnap {
	sn := nodeSnap{open: len(s.open), nodes: len(s.nodes), firstLive: s.firstLive, saved: make([]node, len(s.open))}
	// One backing array each for the nodes' pods, classes and used vectors (each node's part
	// capped, so an append to it copies): a snapshot is taken per pass and pool.
	pods, used := 0, 0
	for _, n := range s.open {
		pods += len(n.pods)
		used += len(n.used)
	}
	podBuf, clsBuf, usedBuf := make([]*corev1.Pod, 0, pods), make([]*class, 0, pods), make(resVec, 0, used)
	for i, n := range s.open {
		c := *n
		podBuf = append(podBuf, n.pods...)
		c.pods = podBuf[len(podBuf)-len(n.pods) : len(podBuf) : len(podBuf)]
		clsBuf = append(clsBuf, n.cls...)
		c.cls = clsBuf[len(clsBuf)-len(n.cls) : len(clsBuf) : len(clsBuf)]
		if n.used != nil {
			usedBuf = append(usedBuf, n.used...)
			c.used = usedBuf[len(usedBuf)-len(n.used) : len(usedBuf) : len(usedBuf)]
		}
		c.ports = append([]hostPort(nil), n.ports...)
		sn.saved[i] = c
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
}

// fitScore rates how well a pod of req fills the room rem of a type with allocatable alloc:
// higher when the room left after it is smaller and more even, measured as the squared length of
// that room with each resource as a share of alloc (the L2-norm heuristic for vector bin packing;
// it beat the dot product of request and room on the mixed benchmark shape).
func fitScore(req, rem, alloc resVec) float64 {
	v := 100.0
	for r, q := range req {
		if alloc[r] > 0 {
			x := float64(rem[r]-q) / float64(alloc[r])
			v -= x * x
		}
	}
	return v
}

// fillRoom places pods of the items that may go on n into the room n's cheapest type has left,
// best-balancing first.
func (s *solver) fillRoom(n *node, items []*item) {
	skip := map[*item]bool{}
	for {
		alloc := n.pool.types[n.cheap].alloc
		rem := alloc.clone()
		rem.sub(n.used)
		var best *item
		bestScore := -1.0
		for _, it := range items {
			if skip[it] || it.left() == 0 || (it.zone >= 0 && it.zone != n.zone) || !fitsIn(n.used, it.c.req, alloc) {
				continue
			}
			if sc := fitScore(it.c.req, rem, alloc); sc > bestScore {
				best, bestScore = it, sc
			}
		}
		if best == nil {
			return
		}
		if !s.tryRoom(best, n) {
			skip[best] = true
		}
	}
}

// tryRoom puts one pod of it on n if n's requirements admit it and its cheapest type holds it.
func (s *solver) tryRoom(it *item, n *node) bool {
	p, c := n.pool, it.c
	a := s.effAt(c, 0).alts[0]
	zm, cm := n.zoneMask&a.zoneMask, n.ctMask&a.ctMask
	if zm == 0 || cm == 0 || n.cheap < 0 {
		return false
	}
	reqs, cand := n.reqs, n.options
	if len(a.reqs) > 0 {
		reqs = n.reqs.And(a.reqs)
		if reqs.Conflict() != "" {
			return false
		}
		cand = cand.and(s.compat(p, a))
	}
	t := p.types[n.cheap]
	if !cand.has(n.cheap) || t.zonesFor(zm, cm) == 0 || !fitsIn(n.used, c.req, t.alloc) {
		return false
	}
	if zm != n.zoneMask || cm != n.ctMask {
		cand = s.filter(cand, func(t *itype) bool { return t.zonesFor(zm, cm) != 0 }, p.types)
	}
	ok := false
	s.withItem(it, func() { ok, _, _ = s.commitNew(c, n, 1, cand, reqs, zm, cm, n.zone) })
	if ok {
		it.next++
	}
	return ok
}

// withItem runs fn with the item's pods standing in for its class's, so assign takes them.
func (s *solver) withItem(it *item, fn func()) {
	c := it.c
	pods, next := c.pods, c.next
	c.pods, c.next = it.pods, it.next
	fn()
	c.pods, c.next = pods, next
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
		reqs = reqs.And(a.reqs)
		zm &= a.zoneMask
		cm &= a.ctMask
	}
	if ok && reqs.Conflict() == "" && zm != 0 && cm != 0 {
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
	options := func() bitset { return s.optionsFor(p, n.reqs, n.used, n.zoneMask, n.ctMask) }
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
