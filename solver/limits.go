package solver

// Passes over a pool with limits. A NodePool's limits bound only the capacity of all the nodes
// it launches together, so the improvement passes (repack, rebalance, drain) run on limited pools
// as on any other: the pool's committed capacity is recounted from its planned nodes before the
// pass, the pass's own launches are checked against it as they happen, and the pass is undone if
// the plan it leaves launches more than the limits allow.

// recommit recounts what pool p's planned nodes commit against its limits: each live new node
// its cheapest type's capacity (what a launch picks), an emptied node nothing.
func (s *solver) recommit(p *pool) {
	if !p.limited {
		return
	}
	p.committed = s.d.zero()
	for _, n := range s.open {
		if n.pool != p || !n.isNew() {
			continue
		}
		n.commit = nil
		if len(n.pods) > 0 && n.cheap >= 0 {
			n.commit = p.types[n.cheap].capacity
			p.committed.add(n.commit)
		}
	}
}

// withinLimits runs pass over pool p and keeps what it did only if the pool's planned nodes
// still fit its limits afterwards.
func (s *solver) withinLimits(p *pool, pass func()) {
	if !p.limited {
		pass()
		return
	}
	snap := s.snapshot()
	s.recommit(p)
	pass()
	s.recommit(p)
	if !lessEq(p.committed, p.remaining) {
		s.restore(snap)
		s.recommit(p)
	}
}
