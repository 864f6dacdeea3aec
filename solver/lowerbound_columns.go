package solver

import (
	"math"
	"sort"
)

// The assignment LP's columns: which offerings it keeps, and the prices of those it leaves out.

// shortlist keeps, of the undominated columns, those within 10% of some group's cheapest way to
// run alone (price × the share of the node one pod takes, on its binding resource): the LP's
// cost grows with the cube of its rows, and columns no group runs well on alone rarely carry
// the optimum. Left-out columns still count in the bound (borrowPrices).
func shortlist(groups []*asgGroup, cols []*asgCol, kept []int, rows []int) []int {
	solo := func(g *asgGroup, c *asgCol) float64 { return soloCost(g, c, rows) }
	best := make([]float64, len(groups))
	for gi, g := range groups {
		best[gi] = math.Inf(1)
		for _, ci := range kept {
			if cols[ci].usable.has(gi) {
				best[gi] = math.Min(best[gi], solo(g, cols[ci]))
			}
		}
	}
	var out []int
	for _, ci := range kept {
		for gi, g := range groups {
			if cols[ci].usable.has(gi) && solo(g, cols[ci]) <= 1.10*best[gi] {
				out = append(out, ci)
				break
			}
		}
	}
	return out
}

// asgBudget bounds the work of one assignment LP solve (simplex pivots × (basis size² + columns)).
// An LP whose basis alone would take more than the budget to invert keeps its best columns (those
// for which some group runs closest to its cheapest way alone); the pivots are cut at the budget. Both
// are counted in Result.Passes.
const asgBudget = 4e9

// withinBudget cuts lpCols to the columns the work budget allows: a basis of m rows (one per group
// and one per column and resource) costs about m³ to bring to optimality, so m³ ≤ asgBudget.
func (s *solver) withinBudget(groups []*asgGroup, cols []*asgCol, lpCols []int, rows []int) []int {
	side := math.Cbrt(asgBudget)
	keep := int((side - float64(len(groups))) / float64(max(len(rows), 1)))
	if len(lpCols) <= keep {
		return lpCols
	}
	keep = max(keep, 0)
	s.tally.asgDropped += len(lpCols) - keep
	best := make([]float64, len(groups))
	for gi := range groups {
		best[gi] = math.Inf(1)
		for _, ci := range lpCols {
			if cols[ci].usable.has(gi) {
				best[gi] = math.Min(best[gi], soloCost(groups[gi], cols[ci], rows))
			}
		}
	}
	score := make(map[int]float64, len(lpCols))
	for _, ci := range lpCols {
		score[ci] = math.Inf(1)
		for gi, g := range groups {
			if cols[ci].usable.has(gi) {
				score[ci] = math.Min(score[ci], soloCost(g, cols[ci], rows)/math.Max(best[gi], 1e-12))
			}
		}
	}
	ranked := append([]int(nil), lpCols...)
	sort.SliceStable(ranked, func(a, b int) bool { return score[ranked[a]] < score[ranked[b]] })
	chosen := map[int]bool{}
	for _, ci := range ranked[:keep] {
		chosen[ci] = true
	}
	var out []int
	for _, ci := range lpCols {
		if chosen[ci] {
			out = append(out, ci)
		}
	}
	return out
}

// soloCost is what running alone on column c costs a pod of g: the price × the share of the node
// one pod takes on its binding resource.
func soloCost(g *asgGroup, c *asgCol, rows []int) float64 {
	share := 0.0
	for _, r := range rows {
		if g.d[r] > 0 {
			share = math.Max(share, float64(g.d[r])/float64(max(c.t.alloc[r], 1)))
		}
	}
	return c.price * share
}

// borrowPrices gives a column outside the LP the prices — of an LP column of the same pool, or
// a vertex of its own feasible prices, scaled into its feasibility — under which the groups that
// may use it lose least against their LP duals.
func borrowPrices(c *asgCol, groups []*asgGroup, duals []float64, cols []*asgCol, lpCols []int, rows []int) []float64 {
	var best []float64
	bestScore := math.Inf(-1)
	// Candidates: the LP columns' prices, and the vertices of c's own feasible prices (its whole
	// price on one resource).
	cands := make([][]float64, 0, len(lpCols)+len(rows))
	for _, j := range lpCols {
		if o := cols[j]; o.p == c.p && o.v != nil {
			cands = append(cands, o.v)
		}
	}
	for _, r := range rows {
		if a := c.t.alloc[r]; a > 0 {
			v := make([]float64, len(c.t.alloc))
			v[r] = c.price / float64(a)
			cands = append(cands, v)
		}
	}
	for _, ov := range cands {
		capv := 0.0
		for r, q := range c.t.alloc {
			capv += float64(max(q, 0)) * ov[r]
		}
		f := 1.0
		if capv > c.price {
			f = c.price / capv
		}
		score := math.Inf(1)
		for gi, g := range groups {
			if !c.usable.has(gi) || duals[gi] <= 0 {
				continue
			}
			val := 0.0
			for r, q := range g.d {
				val += float64(q) * ov[r]
			}
			score = math.Min(score, f*val/duals[gi])
		}
		if score > bestScore {
			best, bestScore = ov, score
		}
	}
	return best
}

// pruneDominated marks columns another column dominates and returns the rest, in order.
func pruneDominated(cols []*asgCol, rows []int) []int {
	order := make([]int, len(cols))
	for i := range order {
		order[i] = i
	}
	// Cheapest per unit of cpu first, so dominators tend to come first.
	sort.SliceStable(order, func(a, b int) bool {
		return cols[order[a]].price*float64(cols[order[b]].t.alloc[rows[0]]) < cols[order[b]].price*float64(cols[order[a]].t.alloc[rows[0]])
	})
	var kept []int
	for _, i := range order {
		c := cols[i]
		for _, j := range kept {
			if dominates(cols[j], c, rows) {
				c.dom = j
				break
			}
		}
		if c.dom < 0 {
			kept = append(kept, i)
		}
	}
	sort.Ints(kept)
	return kept
}

// dominates: a offers at least as much of every resource per dollar as b and every group that
// may use b may use a.
func dominates(a, b *asgCol, rows []int) bool {
	for i := range b.usable {
		if b.usable[i]&^a.usable[i] != 0 {
			return false
		}
	}
	for _, r := range rows {
		if float64(a.t.alloc[r])*b.price < float64(b.t.alloc[r])*a.price*(1-1e-12) {
			return false
		}
	}
	return true
}

// redundantRow reports whether column c's capacity row for rows[ri] is implied by another of
// its rows not already dropped: no group that may use c needs a larger share of c's
// allocatable in that resource than in the other (all pods-per-node rows of large types,
// typically), or no such group requests it at all.
func redundantRow(c *asgCol, groups []*asgGroup, rows []int, ri int, dropped []bool) bool {
	r := rows[ri]
	for ro, r2 := range rows {
		if ro == ri || dropped[ro] || c.t.alloc[r2] <= 0 {
			continue
		}
		ok := true
		for gi, g := range groups {
			if c.usable.has(gi) && float64(g.d[r])*float64(c.t.alloc[r2]) > float64(g.d[r2])*float64(c.t.alloc[r]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
