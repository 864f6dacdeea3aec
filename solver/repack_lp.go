package solver

import (
	"fmt"
	"math"
	"sort"
)

// lpFullStrict and lpFullTopUp are how full (on its binding resource) a node built from the LP's
// assignment must be to be kept (memo.lpFull); what a fuller node cannot take is left to the
// greedy packing that follows. The first LP-started repack keeps only the nodes the LP fills
// almost whole and leaves the tail to the greedy packing; the second, which tops up, keeps more.
// (Measured on the EC2-model shapes: this order was 0.005 better in mean cost ÷ bound than 0.9
// for both, at the same cost; each pass is still kept only if the plan gets cheaper.)
const (
	lpFullStrict = 0.95
	lpFullTopUp  = 0.9
)

// lpPack opens nodes for the pods repack is moving (items, all of pool p) by rounding the
// assignment LP (see lowerbound_assign.go) over them: the LP says which offerings — family,
// size, architecture, zone, capacity type — to buy and how many pods of each item each should
// carry. For each offering it buys, largest share first, nodes of that type are filled with the
// pods the LP gave it, best-balancing pod first, as long as they come out at least memo.lpFull
// full; the remainder (the fractional tail of every offering) is left to the greedy packing.
// Placing classes largest first, or even choosing each new node's type by value per dollar,
// puts pods on nodes of a general family that the LP sends to compute and memory families;
// this follows the LP's family choice instead.
func (s *solver) lpPack(p *pool, order []*item, memo *passMemo) {
	var items []*item
	var groups []*asgGroup
	for _, it := range order {
		if it.left() == 0 {
			continue
		}
		items = append(items, it)
		groups = append(groups, &asgGroup{n: float64(it.left()), d: it.c.req, c: it.c, alts: s.effAt(it.c, 0).alts, zone: it.zone})
	}
	if len(groups) == 0 {
		return
	}
	sig := groupsKey(p, groups, memo.rank)
	lp := memo.solutions[sig]
	if lp == nil {
		lp = s.solveLPPack(p, groups)
		memo.solutions[sig] = lp
	}
	if lp.cols == nil {
		return
	}
	cols, lpCols, sol, rows := lp.cols, lp.lpCols, lp.sol, lp.rows
	for gi, it := range items {
		it.dual = sol.pi[gi]
	}
	ord := make([]int, len(lpCols))
	for i := range ord {
		ord[i] = i
	}
	sort.SliceStable(ord, func(a, b int) bool { return sol.nodes[ord[a]] > sol.nodes[ord[b]] })
	for _, ki := range ord {
		if sol.nodes[ki] < 1-1e-6 || sol.pods[ki] == nil {
			continue
		}
		c := cols[lpCols[ki]]
		zone := -1
		var sub []*item
		var real []*item
		for gi, it := range items {
			k := int(math.Floor(sol.pods[ki][gi] + 1e-6))
			k = min(k, it.left())
			if k <= 0 {
				continue
			}
			if it.zone >= 0 {
				zone = it.zone
			}
			sub = append(sub, &item{c: it.c, zone: it.zone, pods: it.pods[it.next : it.next+k]})
			real = append(real, it)
		}
		if len(sub) == 0 {
			continue
		}
		compat := make([]bitset, len(sub))
		for i, it := range sub {
			compat[i] = s.compat(p, s.effAt(it.c, 0).alts[0])
		}
		for {
			f := s.simulateFill(p, c.t.idx, sub, compat, len(sub), zone)
			if f == nil || !fullEnough(f.used, c.t.alloc, rows, memo.lpFull) {
				break
			}
			n := s.commitFill(p, f, sub, zone)
			if n == nil {
				break
			}
			for i, it := range real {
				it.next += f.counts[i]
			}
		}
	}
}

// passMemo keeps what the improvement passes compute again and again: lpPack's LP solutions
// (the pods the LP-started repack passes move are the same), node contents no split improves
// (repack repeats node patterns by the hundred; only for pools without limits, where a split
// depends on nothing else), and the types each (pool, requirements, masks) admits.
type passMemo struct {
	solutions    map[string]*lpPlan
	unsplittable map[string]bool
	admitted     map[string]bitset
	byPrice      map[string][]pairCand // admitted's types with an offering, by price (split)
	rank         map[*class]int
	lpFull       float64 // the share lpPack's nodes must be full to
	// patterns: the LP-started repack rounds the pattern LP (patternPack) instead of the
	// assignment LP; patternWork is the work its passes did, patternOut whether one ran out of
	// its budget.
	patterns    bool
	seeds       []seedPattern // the plan's node contents repackPool took apart
	patternWork float64
	patternOut  bool
	// pairFailed: the pairs of node contents (contentKey, in the order rebalance tried them)
	// whose re-split did not pay. A pair's outcome depends on its two contents alone, so the
	// tail's later rebalance calls (it runs rebalance up to four times: both orders around
	// drain) do not price them again.
	pairFailed map[[2]string]bool
}

func newPassMemo(classes []*class) *passMemo {
	m := &passMemo{solutions: map[string]*lpPlan{}, unsplittable: map[string]bool{}, admitted: map[string]bitset{}, byPrice: map[string][]pairCand{},
		pairFailed: map[[2]string]bool{}, rank: make(map[*class]int, len(classes)), lpFull: lpFullTopUp}
	for i, c := range classes {
		m.rank[c] = i
	}
	return m
}

// lpPlan is a solved assignment LP over the groups lpPack moves (cols nil when there was none).
type lpPlan struct {
	p      *pool
	groups []*asgGroup
	cols   []*asgCol
	lpCols []int
	sol    asgSolution
	rows   []int
}

// groupsKey identifies lpPack's groups: pool, and per group its class, zone and pod count.
func groupsKey(p *pool, groups []*asgGroup, rank map[*class]int) string {
	b := fmt.Appendf(nil, "%d", p.idx)
	for _, g := range groups {
		b = fmt.Appendf(b, ";%d@%d×%g", rank[g.c], g.zone, g.n)
	}
	return string(b)
}

// solveLPPack builds and solves the assignment LP over groups, within pool p.
func (s *solver) solveLPPack(p *pool, groups []*asgGroup) *lpPlan {
	rows := demandRows(groups, s.d.n())
	cols, _ := s.assignmentColumns(groups, p)
	kept := pruneDominated(cols, rows)
	lpCols := s.withinBudget(groups, cols, shortlist(groups, cols, kept, rows), rows)
	if len(lpCols) == 0 {
		return &lpPlan{}
	}
	lp := &lpPlan{p: p, groups: groups, cols: cols, lpCols: lpCols, sol: s.solveAssignment(groups, cols, lpCols, rows), rows: rows}
	s.asgSolved = append(s.asgSolved, lp)
	return lp
}

// assignmentColumns are the assignment LP's columns: one per (pool, instance type, cheapest offering)
// some group may use, within pool only (nil: every pool), each marked with the groups that may use it;
// colIdx finds a column by that key.
func (s *solver) assignmentColumns(groups []*asgGroup, only *pool) (cols []*asgCol, colIdx colIndex) {
	colIdx = newColIndex(s.pools)
	for _, g := range groups {
		s.eachUsable(g, only, func(p *pool, t *itype, zm, cm uint64) {
			pr, oi := t.price(zm, cm)
			if oi < 0 {
				return
			}
			if _, ok := colIdx.get(p, t, oi); !ok {
				colIdx.set(p, t, oi, len(cols))
				cols = append(cols, &asgCol{p: p, t: t, offer: oi, price: pr, usable: newBitset(len(groups)), dom: -1})
			}
		})
	}
	if len(cols) > 0 {
		markUsable(s, groups, cols, colIdx, only)
	}
	return cols, colIdx
}

// fullEnough reports whether used fills alloc to share on some requested resource.
func fullEnough(used, alloc resVec, rows []int, share float64) bool {
	for _, r := range rows {
		if alloc[r] > 0 && float64(used[r]) >= share*float64(alloc[r]) {
			return true
		}
	}
	return false
}

// demandRows lists the resources some group requests.
func demandRows(groups []*asgGroup, n int) []int {
	var rows []int
	for r := 0; r < n; r++ {
		for _, g := range groups {
			if g.d[r] > 0 {
				rows = append(rows, r)
				break
			}
		}
	}
	return rows
}

// markUsable records, for every column, which groups may use it (not only the groups it is the
// cheapest offering of its type for), within pool only unless nil.
func markUsable(s *solver, groups []*asgGroup, cols []*asgCol, colIdx colIndex, only *pool) {
	for gi, g := range groups {
		s.eachUsable(g, only, func(p *pool, t *itype, zm, cm uint64) {
			for oi, o := range t.offers {
				if zm&(1<<uint(o.zone)) == 0 || cm&(1<<uint(o.ct)) == 0 {
					continue
				}
				if ci, ok := colIdx.get(p, t, oi); ok {
					cols[ci].usable.set(gi)
				}
			}
		})
	}
}

// colIndex finds an assignment-LP column by (pool, instance type, offering); dense, since the
// bound and the LP-started repack look a column up for every group, usable type and offering.
type colIndex [][][]int32 // [pool][type][offering]: column index + 1, 0 for none

func newColIndex(pools []*pool) colIndex {
	x := make(colIndex, len(pools))
	for _, p := range pools {
		x[p.idx] = make([][]int32, len(p.types))
	}
	return x
}

func (x colIndex) get(p *pool, t *itype, oi int) (int, bool) {
	if o := x[p.idx][t.idx]; oi < len(o) && o[oi] > 0 {
		return int(o[oi] - 1), true
	}
	return 0, false
}

func (x colIndex) set(p *pool, t *itype, oi, ci int) {
	o := x[p.idx][t.idx]
	if o == nil {
		o = make([]int32, len(t.offers))
		x[p.idx][t.idx] = o
	}
	o[oi] = int32(ci + 1)
}
