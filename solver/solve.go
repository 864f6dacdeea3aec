package solver

import (
	"fmt"
	"strings"
	"time"
)

// Solve places the pending pods of in: onto existing nodes and in-flight claims first, then onto
// new nodes it plans, and explains every pod it cannot place. It is pure and deterministic.
func Solve(in Input) Result { return SolveWith(in, Options{}) }

// SolveWith is Solve with options; Result.Passes reports each pass (timed when opts.Now is set).
func SolveWith(in Input, opts Options) Result {
	var s *solver
	var note string
	start := time.Time{}
	if opts.Now != nil {
		start = opts.Now()
	}
	s = placed(in, false)
	// When capacity (limits, or existing nodes alone) leaves room for only some pods and the
	// size-ordered placement left out a pod of higher priority than one it placed, place again
	// highest priority first.
	if s.priorityInverted() {
		s, note = placed(in, true), "placed again highest priority first: room ran out for a pod of higher priority than one placed"
	}
	ps := &passes{s: s, now: opts.Now}
	place := PassReport{Name: "place", Ran: true, Note: note, CostAfter: s.planCost()}
	if d := s.droppedDomains(); d != "" {
		place.CutShort, place.Shortfall = true, d
	}
	if opts.Now != nil {
		place.Duration = opts.Now().Sub(start)
	}
	ps.list = append(ps.list, place)
	memo := newPassMemo(s.classes)
	ps.run("split", 0, func() { s.improve(memo) })
	// A plan still far above the cheap bound after the greedy placement (lpFarOff) goes straight
	// to the LP-started repacks; there the greedy repacks never gained after them. The local
	// moves (rebalance, drain) run once, after the pattern LP: before it as well they cost a
	// fifth of the solve for what the pattern LP then mostly redoes. One close to the bound gets
	// the greedy repacks (plain, then topped-up) and drain.
	if cheap, _ := s.resourceBound(); s.planCost() > lpFarOff*cheap {
		far := fmt.Sprintf("plan above %.2f× the resource bound after placement: LP-started repacks instead", lpFarOff)
		ps.skip("repack", far)
		ps.skip("repack-topup", far)
		ps.run("lp-repack", asgBudget, func() {
			memo.lpFull = lpFullStrict
			s.repack(false, true, memo)
		})
		ps.run("lp-repack-topup", asgBudget, func() {
			memo.lpFull = lpFullTopUp
			s.repack(true, true, memo)
		})
	} else {
		near := fmt.Sprintf("plan within %.2f× the resource bound after placement: greedy repacks instead", lpFarOff)
		ps.skip("lp-repack", near)
		ps.skip("lp-repack-topup", near)
		ps.run("repack", 0, func() { s.repack(false, false, memo) })
		// The top-up variant only where the repacked plan is still more than lpWorthIt above
		// the resource bound: the most it can gain is that gap (on the synthetic shapes and
		// the family-p variants that take this branch it never gained within it).
		if cheap, _ := s.resourceBound(); s.planCost() > lpWorthIt*cheap {
			ps.run("repack-topup", 0, func() { s.repack(true, false, memo) })
		} else {
			ps.skip("repack-topup", fmt.Sprintf("plan within %.2f× the resource bound after repack ($%.4f/h ÷ $%.4f/h): too little for the top-up to gain", lpWorthIt, s.planCost(), cheap))
		}
		ps.run("drain", 0, func() { s.drain() })
	}
	// The lower bound (the passes left do not change the demand it covers), then the pattern LP's
	// rounding when the plan is far enough above it for the pattern LP to pay, kept only if it
	// makes the plan cheaper, then the local moves.
	var bound float64
	ps.run("lower-bound", asgBudget, func() { bound = s.bound() })
	if cost := s.planCost(); cost > patternWorthIt*bound {
		ps.run("pattern-repack", patternBudget, func() {
			memo.patterns, memo.lpFull = true, lpFullTopUp
			s.repack(false, true, memo)
			memo.patterns = false
		})
	} else {
		ps.skip("pattern-repack", fmt.Sprintf("plan within %.2f× the lower bound ($%.4f/h ÷ $%.4f/h): too little for the pattern LP to gain", patternWorthIt, cost, bound))
	}
	ps.runNoted("rebalance+drain", func() string { return s.tail(memo) })
	r := s.result()
	r.Passes = ps.list
	return r
}

// placed is a solver over in after its greedy placement; priorityFirst orders the classes by
// priority before size.
func placed(in Input, priorityFirst bool) *solver {
	s := &solver{in: in, groupIdx: map[string]*group{}, priorityFirst: priorityFirst}
	s.setup()
	s.buildDaemonSets()
	s.buildPools()
	s.buildExisting()
	s.buildClasses()
	s.registerExistingAnti()
	s.resolveMembership()
	s.refuseBeyondDomains()
	s.countExisting()
	s.orderClasses()
	s.pendingPrices()
	s.place()
	return s
}

// lpFarOff: after the greedy placement and its split pass, plans above this multiple of the
// cheap (resource-by-resource) bound are where the LP-started repack pays. The synthetic shapes
// sit at 1.02–1.08 there, the EC2-model ones at 1.4–2.6 (their per-node overheads and families
// make the cheap bound loose).
const lpFarOff = 1.15

// bothTailsNodes: plans of up to this many new nodes run the tail in both orders and keep the
// cheaper plan (each order wins on some inputs; on small plans the second run costs little). Larger
// plans run one order, and the pass report says so.
const bothTailsNodes = 64

// tail runs the local moves over the finished plan: rebalance (pairs re-split) then drain
// (emptying small nodes into others' room), and on small plans also drain then rebalance,
// keeping whichever plan is cheaper. It returns a note for the pass report when it ran one order.
func (s *solver) tail(memo *passMemo) string {
	live := 0
	for _, n := range s.open {
		if len(n.pods) > 0 {
			live++
		}
	}
	if live > bothTailsNodes {
		s.rebalance(memo)
		s.drain()
		return fmt.Sprintf("one order (rebalance, drain): the plan has %d nodes with pods; both orders run up to %d", live, bothTailsNodes)
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
	return ""
}

// droppedDomains says which zones and capacity types the plan could not use because the
// solver's bitmasks hold maxDomains of each ("" when none was dropped).
func (s *solver) droppedDomains() string {
	var out []string
	if n := len(s.droppedZones); n > 0 {
		out = append(out, fmt.Sprintf("%d zone(s) beyond the first %d were left out (offerings there not used; pods whose placement depends on the zone refused), first %s", n, maxDomains, s.droppedZones[0]))
	}
	if n := len(s.droppedCTs); n > 0 {
		out = append(out, fmt.Sprintf("%d capacity type(s) beyond the first %d were left out (offerings there not used; pods selecting a capacity type refused), first %s", n, maxDomains, s.droppedCTs[0]))
	}
	return strings.Join(out, "; ")
}
