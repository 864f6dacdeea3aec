package solver

// FreshLowerBound is the lower bound of in's demand after greedy placement, its assignment LP
// solved afresh (no LP-started repack has run, so none is reused): TestBoundReuses… compares the
// bound a solve reports with it.
func FreshLowerBound(in Input) (bound float64, reused int) {
	s := placed(in, false)
	bound = s.lowerBound()
	return bound, s.tally.asgReused
}

// FloorCounts solves in and returns how many nodes the split pass and how many pairs the pair
// rebalance passed over by splitFloor, and how many pairs were priced.
func FloorCounts(in Input) (splits, pairs, priced int) {
	s := placed(in, false)
	memo := newPassMemo(s.classes)
	s.improve(memo)
	s.repack(false, false, memo)
	s.rebalance(memo)
	return s.tally.splitsFloored, s.tally.pairsFloored, s.tally.pairsPriced
}

// AssignmentBounds is in's assignment bound after greedy placement (no LP-started repack has run,
// so no LP is reused): byBlocks as the bound solves it (pool by pool when its LP is
// block-diagonal; blocks counts those solves) and whole with its LP solved in one piece.
func AssignmentBounds(in Input) (byBlocks float64, blocks int, whole float64) {
	s := placed(in, false)
	_, w := s.resourceBound()
	byBlocks, blocks = s.assignmentBound(w), s.tally.asgBlocks
	s = placed(in, false)
	s.wholeLP = true
	_, w = s.resourceBound()
	return byBlocks, blocks, s.assignmentBound(w)
}
