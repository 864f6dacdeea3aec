package solver

import (
	"strings"
	"testing"
)

// An assignment LP with more columns than its work budget allows keeps the best of them (those on
// which some group runs closest to its cheapest way alone), counts the rest as left out, and the
// pass report says so.
func TestAssignmentBudgetKeepsBestColumns(t *testing.T) {
	rows := []int{0, 1}
	g := &asgGroup{n: 10, d: resVec{1000, 1000}}
	var cols []*asgCol
	var lpCols []int
	const n = 3000
	for i := range n {
		u := newBitset(1)
		u.set(0)
		// Column i costs 1 + i/n per node of the same size: lower index, better column.
		cols = append(cols, &asgCol{t: &itype{alloc: resVec{4000, 4000}}, price: 1 + float64(i)/n, usable: u, dom: -1})
		lpCols = append(lpCols, i)
	}
	s := &solver{}
	ps := &passes{s: s}
	var kept []int
	ps.run("lp", asgBudget, func() {
		kept = s.withinBudget([]*asgGroup{g}, cols, lpCols, rows)
		s.tally.work += 1
	})
	want := 793 // (∛asgBudget − 1 group) ÷ 2 rows
	if len(kept) != want {
		t.Fatalf("kept %d columns, want %d", len(kept), want)
	}
	for i, ci := range kept {
		if ci != i {
			t.Fatalf("kept column %d at %d: want the cheapest columns, in their order", ci, i)
		}
	}
	r := ps.list[0]
	if !r.CutShort || !strings.Contains(r.Shortfall, "2207 assignment LP column(s) left out") || r.Budget != asgBudget {
		t.Fatalf("report %+v, want it cut short with 2207 columns left out", r)
	}
	// Within the budget nothing is left out and nothing is reported.
	ps = &passes{s: s}
	ps.run("lp", asgBudget, func() { kept = s.withinBudget([]*asgGroup{g}, cols, lpCols[:100], rows) })
	if len(kept) != 100 || ps.list[0].CutShort {
		t.Fatalf("kept %d of 100, report %+v", len(kept), ps.list[0])
	}
}
