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
	s.improve()
	s.repack(false, nil)
	s.repack(true, nil)
	lp := &lpCache{}
	s.repack(false, lp)
	s.repack(true, lp)
	s.drain()
	return s.result()
}
