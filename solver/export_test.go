package solver

// FreshLowerBound is the lower bound of in's demand after greedy placement, its assignment LP
// solved afresh (no LP-started repack has run, so none is reused): TestBoundReuses… compares the
// bound a solve reports with it.
func FreshLowerBound(in Input) (bound float64, reused int) {
	s := placed(in, false)
	bound = s.lowerBound()
	return bound, s.tally.asgReused
}
