package solver

import "testing"

// The pattern LP's dive re-solves it dozens of times over a growing set of columns; a re-solve
// reuses the LP's buffers (columns, their entries, the warm start's matrices), so what it allocates
// does not grow with the rows or the columns.
func TestPatternLPResolveAllocsDoNotGrowWithSize(t *testing.T) {
	allocs := func(rows, pats int) float64 {
		lp := &patternLP{items: make([]*item, rows), need: make([]int, rows), kinds: []patKind{{price: 1}}}
		for g := range rows {
			lp.need[g] = 5 + g%7
		}
		for j := range pats {
			a, b := j%rows, (j*7+3)%rows
			counts := map[int]int{a: 1 + j%3}
			if b != a {
				counts[b] = 1 + j%2
			}
			lp.pats = append(lp.pats, newPattern(0, counts, 1+float64(j%5)/10))
		}
		lp.solve() // the first solve starts cold and sizes the buffers
		return testing.AllocsPerRun(20, func() { lp.solve() })
	}
	small, large := allocs(3, 10), allocs(40, 400)
	if large > small+5 {
		t.Fatalf("a warm re-solve allocates %.0f times on 40 rows and 400 patterns, %.0f on 3 and 10: its buffers are not reused", large, small)
	}
	t.Logf("allocations per re-solve: %.0f (3 rows) and %.0f (40 rows)", small, large)
}
