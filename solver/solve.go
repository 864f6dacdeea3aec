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
	s.repack(false, false, memo)
	s.repack(true, false, memo)
	if cheap, _ := s.resourceBound(); s.planCost() > lpWorthIt*cheap {
		s.repack(false, true, memo)
		s.repack(true, true, memo)
	}
	s.drain()
	s.rebalance(memo)
	s.drain()
	s.rebalance(memo)
	return s.result()
}
