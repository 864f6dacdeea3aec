package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

const (
	// SpotToSpotMinOptions is how many instance-type options cheaper than a spot node a spot
	// replacement of that single node needs (upstream Karpenter's rule): with fewer, replacing would
	// chase the lowest spot price into the pools most likely to be interrupted.
	SpotToSpotMinOptions = 15
	// exhaustiveBelow: with at most this many candidates every prefix and every single candidate is
	// tried; above it, a coarse grid of prefix sizes is refined around its best point.
	exhaustiveBelow = 24
	gridPoints      = 8
	refineSteps     = 6
	// maxUnplacedRetries bounds how often a set is shrunk by the nodes whose pods found no place.
	maxUnplacedRetries = 3
	savingsEpsilon     = 1e-9
	// DefaultMinSavingsFraction is the least share of the disrupted nodes' price a repack must save
	// unless ConsolidationInput says otherwise: moving many pods to save a cent is churn, and a later
	// round would find the next cent (flapping).
	DefaultMinSavingsFraction = 0.05
)

// emptyCommand deletes the candidates that run no movable pods, within the pools' Empty budgets.
func (p *planner) emptyCommand() (Command, bool) {
	cmd := Command{Reason: v1.DisruptionReasonEmpty}
	for _, c := range p.cands {
		if len(c.movable) > 0 {
			continue
		}
		if !p.take(c.pool, v1.DisruptionReasonEmpty) {
			p.kept[c.Node] = KeptBudget
			continue
		}
		p.gone[c.Node] = true
		cmd.Delete = append(cmd.Delete, c.Node)
		cmd.RemovedPerHour += c.price
	}
	cmd.SavingsPerHour = cmd.RemovedPerHour
	return cmd, len(cmd.Delete) > 0
}

// evaluation is one tried set of nodes to remove and where their pods would go.
type evaluation struct {
	set     []*cand
	result  Result
	removed float64
	savings float64
	valid   bool
	// unplaceable are candidates dropped from the set because a pod of theirs fit nowhere else.
	unplaceable []*cand
}

// repackCommand searches the candidate sets for the one whose removal saves the most.
func (p *planner) repackCommand() (Command, bool, ConsolidationSearch) {
	list := p.repackList()
	if len(list) == 0 {
		return Command{}, false, ConsolidationSearch{}
	}
	s := newSetSearch(p, list)
	if len(list) <= exhaustiveBelow {
		var sets [][]*cand
		for k := 1; k <= len(list); k++ {
			sets = append(sets, list[:k])
		}
		for _, c := range list {
			sets = append(sets, []*cand{c})
		}
		s.bestFirst(sets)
	} else {
		s.gridSearch()
	}
	for _, c := range list {
		if s.unplaceable[c] {
			p.kept[c.Node] = KeptPodsNotPlaceable
		} else {
			p.kept[c.Node] = KeptNoSaving
		}
	}
	if !s.best.valid {
		return Command{}, false, s.report
	}
	return p.command(s.best), true, s.report
}

// setSearch evaluates candidate sets, keeping the best. A set whose upper bound on savings (its
// price less the bound on the new nodes its pods need) cannot beat the best found so far is not
// solved: the bound is a true lower bound on what Solve pays, so skipping it never changes the
// answer. Sets are tried highest upper bound first so the best is found early and the rest pruned.
type setSearch struct {
	p    *planner
	list []*cand
	// prefix[k] is the summed price of list[:k].
	prefix      []float64
	best        evaluation
	tried       map[int]float64
	unplaceable map[*cand]bool
	report      ConsolidationSearch
}

func newSetSearch(p *planner, list []*cand) *setSearch {
	s := &setSearch{p: p, list: list, prefix: make([]float64, len(list)+1), tried: map[int]float64{}, unplaceable: map[*cand]bool{}}
	for i, c := range list {
		s.prefix[i+1] = s.prefix[i] + c.price
	}
	if p.bound == nil {
		p.bound = newBound(p)
	}
	return s
}

// upper is the most removing set can save.
func (s *setSearch) upper(set []*cand) float64 {
	removed := 0.0
	for _, c := range set {
		removed += c.price
	}
	return removed - s.p.bound.newNodesCost(set, s.p.gone)
}

// hopeless says a set with this upper bound cannot beat (or tie) the best evaluation so far.
func (s *setSearch) hopeless(upper float64) bool {
	return s.best.valid && upper < s.best.savings-savingsEpsilon
}

// consider keeps e if it saves more than the best so far, or as much with fewer nodes touched.
func (s *setSearch) consider(e evaluation) {
	for _, c := range e.unplaceable {
		s.unplaceable[c] = true
	}
	if !e.valid {
		return
	}
	b := s.best
	if !b.valid || e.savings > b.savings+savingsEpsilon ||
		(e.savings > b.savings-savingsEpsilon && len(e.set)+len(e.result.NewNodeClaims) < len(b.set)+len(b.result.NewNodeClaims)) {
		s.best = e
	}
}

// bestFirst evaluates sets in order of their upper bound, highest first, skipping the hopeless.
func (s *setSearch) bestFirst(sets [][]*cand) {
	type option struct {
		set   []*cand
		upper float64
		i     int
	}
	opts := make([]option, len(sets))
	for i, set := range sets {
		opts[i] = option{set: set, upper: s.upper(set), i: i}
	}
	sort.SliceStable(opts, func(a, b int) bool { return opts[a].upper > opts[b].upper })
	s.report.Sets += len(opts)
	for i, o := range opts {
		if s.hopeless(o.upper) {
			s.report.Skipped += len(opts) - i // sorted: the rest are hopeless too
			break
		}
		s.report.Solved++
		s.consider(s.p.evaluate(o.set))
	}
}

// try evaluates the prefix of k candidates unless it is hopeless, and returns its savings (-1 when
// invalid or skipped: a skipped prefix saves less than the best so far, so it steers the grid
// search exactly as its real savings would).
func (s *setSearch) try(k int) float64 {
	if v, ok := s.tried[k]; ok {
		return v
	}
	v := -1.0
	s.report.Sets++
	if up := s.prefix[k] - s.p.bound.newNodesCost(s.list[:k], s.p.gone); s.hopeless(up) {
		s.report.Skipped++
	} else {
		s.report.Solved++
		e := s.p.evaluate(s.list[:k])
		s.consider(e)
		if e.valid {
			v = e.savings
		}
	}
	s.tried[k] = v
	return v
}

// gridSearch tries prefix sizes on a grid over 1..n (highest upper bound first), then narrows
// around the best of them.
func (s *setSearch) gridSearch() {
	n := len(s.list)
	points := []int{1}
	for i := 1; i <= gridPoints; i++ {
		points = append(points, (n*i+gridPoints-1)/gridPoints)
	}
	byUpper := append([]int(nil), points...)
	ups := map[int]float64{}
	for _, k := range points {
		ups[k] = s.prefix[k] - s.p.bound.newNodesCost(s.list[:k], s.p.gone)
	}
	sort.SliceStable(byUpper, func(a, b int) bool { return ups[byUpper[a]] > ups[byUpper[b]] })
	for _, k := range byUpper {
		s.try(k)
	}
	bestK, bestS := 0, -1.0
	for _, k := range points {
		if v := s.tried[k]; v > bestS {
			bestK, bestS = k, v
		}
	}
	lo, hi := max(1, bestK-(n+gridPoints-1)/gridPoints), min(n, bestK+(n+gridPoints-1)/gridPoints)
	for step := 0; step < refineSteps && hi-lo > 2; step++ {
		left, right := (lo+bestK)/2, (bestK+hi+1)/2
		sl, sr := s.try(left), s.try(right)
		switch {
		case sl > bestS && sl >= sr:
			hi, bestK, bestS = bestK, left, sl
		case sr > bestS:
			lo, bestK, bestS = bestK, right, sr
		default:
			lo, hi = left, right
		}
	}
}

// repackList is the ranked candidates that may be repacked, cut to what the budgets allow.
func (p *planner) repackList() []*cand {
	left := map[string]int{}
	for pool, b := range p.budgets {
		left[pool] = b[v1.DisruptionReasonUnderutilized]
	}
	var list []*cand
	for _, c := range p.cands {
		switch {
		case p.gone[c.Node]:
			continue
		case len(c.movable) == 0:
			continue // empty but over the Empty budget: already kept
		case c.EmptyOnly:
			p.kept[c.Node] = KeptWhenEmpty
			continue
		case !c.priced:
			p.kept[c.Node] = KeptUnpriced
			continue
		case left[c.pool] <= 0:
			p.kept[c.Node] = KeptBudget
			continue
		}
		left[c.pool]--
		list = append(list, c)
	}
	return list
}

// evaluate solves for the pods of set on every other node plus new ones. Candidates whose pods
// cannot be placed are dropped from the set and the rest re-solved.
func (p *planner) evaluate(set []*cand) evaluation {
	set = append([]*cand(nil), set...)
	var dropped []*cand
	for attempt := 0; ; attempt++ {
		e := p.solveWithout(set)
		e.unplaceable = dropped
		if len(e.result.Unschedulable) == 0 {
			return e
		}
		if attempt == maxUnplacedRetries {
			return evaluation{unplaceable: dropped}
		}
		owner := map[*corev1.Pod]*cand{}
		for _, c := range set {
			for _, pod := range c.movable {
				owner[pod] = c
			}
		}
		drop := map[*cand]bool{}
		for _, u := range e.result.Unschedulable {
			if c, ok := owner[u.Pod]; ok {
				drop[c] = true
			}
		}
		var next []*cand
		for _, c := range set {
			if drop[c] {
				dropped = append(dropped, c)
			} else {
				next = append(next, c)
			}
		}
		if len(next) == 0 || len(drop) == 0 {
			return evaluation{unplaceable: dropped}
		}
		set = next
	}
}

func (p *planner) solveWithout(set []*cand) evaluation {
	removing := make(map[string]bool, len(set))
	var pods []*corev1.Pod
	e := evaluation{set: set}
	for _, c := range set {
		removing[c.Node] = true
		pods = append(pods, c.movable...)
		e.removed += c.price
	}
	if p.bound == nil {
		p.bound = newBound(p)
	}
	minSavings := DefaultMinSavingsFraction
	if p.in.MinSavingsFraction != nil {
		minSavings = *p.in.MinSavingsFraction
	}
	if lb := p.bound.newNodesCost(set, p.gone); e.removed-lb < minSavings*e.removed || e.removed-lb <= savingsEpsilon {
		return e // cannot save enough whatever Solve does
	}
	e.result = p.solveRemoving(removing, pods, set)
	e.savings = e.removed - e.result.CostPerHour
	e.valid = len(e.result.Unschedulable) == 0 && e.savings > savingsEpsilon &&
		e.savings >= minSavings*e.removed && p.spotRuleHolds(set, e.result)
	return e
}

// solveRemoving places pods (those of the nodes in removing) on the nodes that stay and new ones.
func (p *planner) solveRemoving(removing map[string]bool, pods []*corev1.Pod, set []*cand) Result {
	in := Input{DaemonSets: p.in.DaemonSets, VolumeZones: p.in.VolumeZones, Pods: pods}
	in.Nodes = make([]ExistingNode, 0, len(p.in.Nodes))
	for _, n := range p.in.Nodes {
		if !removing[n.Name] && !p.gone[n.Name] {
			in.Nodes = append(in.Nodes, n)
		}
	}
	in.NodePools = p.poolsFreeing(set)
	return Solve(in)
}

// poolsFreeing is the NodePools with the limits the removed nodes free up added back.
func (p *planner) poolsFreeing(set []*cand) []NodePoolInput {
	out := append([]NodePoolInput(nil), p.in.NodePools...)
	for i := range out {
		if out[i].Remaining == nil {
			continue
		}
		rem := out[i].Remaining.DeepCopy()
		for _, c := range set {
			if c.pool != out[i].NodePool.Name {
				continue
			}
			for name, q := range c.node.Allocatable {
				if cur, ok := rem[name]; ok {
					cur.Add(q)
					rem[name] = cur
				}
			}
		}
		out[i].Remaining = rem
	}
	return out
}

// spotRuleHolds applies the spot-to-spot rules to spot nodes replaced by one spot node: not at all
// unless SpotToSpot is on, and a single node only with SpotToSpotMinOptions cheaper options.
func (p *planner) spotRuleHolds(set []*cand, r Result) bool {
	if len(r.NewNodeClaims) != 1 || r.NewNodeClaims[0].Offering.CapacityType != v1.CapacityTypeSpot {
		return true
	}
	for _, c := range set {
		if c.node.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot {
			return true
		}
	}
	if !p.in.SpotToSpot {
		return false
	}
	if len(set) != 1 {
		return true
	}
	return spotOptionsBelow(&r.NewNodeClaims[0], set[0].price) >= SpotToSpotMinOptions
}

// command turns the chosen evaluation into a Command and spends the budgets it uses.
func (p *planner) command(e evaluation) Command {
	cmd := Command{Reason: v1.DisruptionReasonUnderutilized, Replacements: e.result.NewNodeClaims,
		Placements: e.result.ExistingPlacements, RemovedPerHour: e.removed, SavingsPerHour: e.savings}
	for _, c := range e.set {
		p.take(c.pool, v1.DisruptionReasonUnderutilized)
		p.gone[c.Node] = true
		delete(p.kept, c.Node)
		cmd.Delete = append(cmd.Delete, c.Node)
	}
	sort.Strings(cmd.Delete)
	return cmd
}
