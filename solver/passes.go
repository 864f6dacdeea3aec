package solver

import (
	"fmt"
	"strings"
	"time"
)

// Options are what a caller may add to a solve beyond its input.
type Options struct {
	// Now, when set, times each pass of the plan (PassReport.Duration); the solver reads no clock
	// of its own, so without it durations are zero and the result is fully deterministic.
	Now func() time.Time
}

// PassReport says what one pass of the solve did.
type PassReport struct {
	// Name of the pass: place, split, repack, repack-topup, lp-repack, lp-repack-topup,
	// pattern-repack, rebalance+drain, drain, lower-bound.
	Name string `json:"name"`
	// Ran is false for a pass the plan did not need; Note says why.
	Ran  bool   `json:"ran"`
	Note string `json:"note,omitempty"`
	// Duration is the wall time of the pass (zero without Options.Now).
	Duration time.Duration `json:"durationNs"`
	// CostBefore and CostAfter are the plan's new-node $/h around the pass (a pass whose plan is
	// not cheaper is undone, so CostAfter ≤ CostBefore for the improvement passes).
	CostBefore float64 `json:"costBefore"`
	CostAfter  float64 `json:"costAfter"`
	// Work is what the pass's LPs did, in work units (simplex pivots × basis size, plus pricing
	// steps), and Budget the work each of its LPs may do; zero for passes without an LP.
	Work   float64 `json:"work,omitempty"`
	Budget float64 `json:"budget,omitempty"`
	// CutShort reports that a budget stopped an LP before it finished; Shortfall says by how much.
	CutShort  bool   `json:"cutShort"`
	Shortfall string `json:"shortfall,omitempty"`
}

// workTally counts what the budgeted LPs did, for the pass reports.
type workTally struct {
	work float64
	// assignment LP: solves stopped at their pivot budget, columns left out to fit the budget
	asgCut, asgDropped int
	// pattern LP: packs whose column generation ran out, pods they left to the greedy fill
	patCut, patLeft int
}

// passes records the pass reports of one solve.
type passes struct {
	s    *solver
	now  func() time.Time
	list []PassReport
}

// run runs pass f under name and records its report.
func (ps *passes) run(name string, budget float64, f func()) {
	before, tally := ps.s.planCost(), ps.s.tally
	var t0 time.Time
	if ps.now != nil {
		t0 = ps.now()
	}
	f()
	r := PassReport{Name: name, Ran: true, CostBefore: before, CostAfter: ps.s.planCost()}
	if ps.now != nil {
		r.Duration = ps.now().Sub(t0)
	}
	d := ps.s.tally
	if r.Work = d.work - tally.work; r.Work > 0 {
		r.Budget = budget
	}
	var short []string
	if n := d.asgCut - tally.asgCut; n > 0 {
		short = append(short, fmt.Sprintf("%d assignment LP solve(s) stopped at the pivot budget before optimality", n))
	}
	if n := d.asgDropped - tally.asgDropped; n > 0 {
		short = append(short, fmt.Sprintf("%d assignment LP column(s) left out to fit the budget", n))
	}
	if n := d.patCut - tally.patCut; n > 0 {
		short = append(short, fmt.Sprintf("%d pattern LP(s) stopped generating columns; %d pods left to the greedy fill", n, d.patLeft-tally.patLeft))
	}
	if len(short) > 0 {
		r.CutShort = true
		r.Shortfall = strings.Join(short, "; ")
	}
	ps.list = append(ps.list, r)
}

// runNoted is run for a pass that may say how it ran (a note for the report).
func (ps *passes) runNoted(name string, f func() string) {
	var note string
	ps.run(name, 0, func() { note = f() })
	ps.list[len(ps.list)-1].Note = note
}

// skip records a pass the plan did not run, and why.
func (ps *passes) skip(name, why string) {
	c := ps.s.planCost()
	ps.list = append(ps.list, PassReport{Name: name, Note: why, CostBefore: c, CostAfter: c})
}
