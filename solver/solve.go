package solver

// Solve places the pending pods of in: onto existing nodes and in-flight claims first, then onto
// new nodes it plans, and explains every pod it cannot place. It is pure and deterministic.
func Solve(in Input) Result {
	s := &solver{in: in, groupIdx: map[string]*group{}}
	s.setup()
	s.buildDaemonSets()
	s.buildPools()
	s.buildExisting()
	s.buildClasses()
	s.registerExistingAnti()
	s.resolveMembership()
	s.countExisting()
	s.orderClasses()
	s.pendingPrices()
	s.place()
	memo := newPassMemo(s.classes)
	s.improve(memo)
	// The topped-up greedy repack first; a plan still far from the cheap bound then gets the
	// LP-started repacks, and one close to it the plain greedy repack (on plans that need the
	// LP the plain one never gained after the topped-up one, so it is skipped there).
	s.repack(true, false, memo)
	if cheap, _ := s.resourceBound(); s.planCost() > lpWorthIt*cheap {
		memo.lpFull = lpFullStrict
		s.repack(false, true, memo)
		memo.lpFull = lpFullTopUp
		s.repack(true, true, memo)
		s.tail(memo)
	} else {
		s.repack(false, false, memo)
		s.drain()
	}
	return s.result()
}

// bothTailsNodes: plans of up to this many new nodes run the tail in both orders and keep the
// cheaper plan (each order wins on some inputs; on small plans the second run costs little).
const bothTailsNodes = 64

// tail runs the local moves over the finished plan: rebalance (pairs re-split) then drain
// (emptying small nodes into others' room), and on small plans also drain then rebalance,
// keeping whichever plan is cheaper.
func (s *solver) tail(memo *passMemo) {
	live := 0
	for _, n := range s.open {
		if len(n.pods) > 0 {
			live++
		}
	}
	if live > bothTailsNodes {
		s.rebalance(memo)
		s.drain()
		return
	}
	snap := s.snapshot()
	s.rebalance(memo)
	s.drain()
	s.rebalance(memo)
	first := s.planCost()
	s.restore(snap)
	s.drain()
	s.rebalance(memo)
	if first < s.planCost()*(1-1e-9) {
		s.restore(snap)
		s.rebalance(memo)
		s.drain()
		s.rebalance(memo)
	}
}
