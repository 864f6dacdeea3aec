package solver

// reusedDuals returns, for the bound's assignment LP over groups and the LP columns lpCols of
// cols, the duals of the LPs lpPack already solved (s.asgSolved), when together they are that
// same LP: every group's LP columns lie in one pool, and for each pool an optimal lpPack LP has
// the same groups (its own, which are repack's items, merged by asgKey: pods of identical shape
// and offerings, which no constraint of the LP tells apart) with the same pod counts, and the
// same LP columns. The bound's LP is then block-diagonal by pool, each block that LP, so its
// duals are optimal for the bound's LP as well. It sets each LP column's resource prices (v) and
// returns each group's dual; ok is false (and nothing is set) when they are not the same LP.
//
// The bound is valid whatever prices it is given (evalAssignment scales them into feasibility
// for every offering), so this only decides whether a second simplex is needed: on a pool
// whose pods are all movable the LP-started repack moved every pod, and the bound's LP is the
// one it solved.
func (s *solver) reusedDuals(groups []*asgGroup, cols []*asgCol, lpCols []int) (duals []float64, ok bool) {
	if len(s.asgSolved) == 0 {
		return nil, false
	}
	poolOf, ok := groupPools(groups, cols, lpCols)
	if !ok {
		return nil, false
	}
	type colKey struct{ t, offer int }
	byPool := map[*pool]map[string]int{} // the bound's groups of each pool, by key
	for gi, g := range groups {
		if poolOf[gi] == nil {
			return nil, false
		}
		m := byPool[poolOf[gi]]
		if m == nil {
			m = map[string]int{}
			byPool[poolOf[gi]] = m
		}
		m[asgKey(g.zone, g.d, g.alts, g.c)] = gi
	}
	colsOf := map[*pool]map[colKey]int{}
	for _, ci := range lpCols {
		c := cols[ci]
		m := colsOf[c.p]
		if m == nil {
			m = map[colKey]int{}
			colsOf[c.p] = m
		}
		m[colKey{c.t.idx, c.offer}] = ci
	}
	duals = make([]float64, len(groups))
	prices := map[int][]float64{}
	for p, want := range byPool {
		var match *lpPlan
		var memberOf []int
		for _, lp := range s.asgSolved {
			if lp.p != p || !lp.sol.optimal || len(lp.lpCols) != len(colsOf[p]) {
				continue
			}
			n := make([]float64, len(groups))
			member := make([]int, len(lp.groups))
			same := true
			for li, g := range lp.groups {
				gi, in := want[asgKey(g.zone, g.d, g.alts, g.c)]
				if !in {
					same = false
					break
				}
				member[li] = gi
				n[gi] += g.n
			}
			for _, gi := range want {
				same = same && n[gi] == groups[gi].n
			}
			for _, ci := range lp.lpCols {
				_, in := colsOf[p][colKey{lp.cols[ci].t.idx, lp.cols[ci].offer}]
				same = same && in
			}
			if same {
				match, memberOf = lp, member
				break
			}
		}
		if match == nil {
			return nil, false
		}
		for _, gi := range want {
			duals[gi] = -1
		}
		for li, gi := range memberOf {
			if d := match.sol.pi[li]; duals[gi] < 0 || d < duals[gi] {
				duals[gi] = d
			}
		}
		for _, ci := range match.lpCols {
			c := match.cols[ci]
			prices[colsOf[p][colKey{c.t.idx, c.offer}]] = c.v
		}
	}
	for ci, v := range prices {
		cols[ci].v = v
	}
	return duals, true
}
