package solver

import (
	"maps"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// lowerBound bounds from below the cost of the demand placed on new nodes. It starts from the LP
// relaxation of covering that demand resource by resource with fractional counts of every
// instance type at its cheapest offering:
//
//	minimize Σ price_t·x_t  subject to  Σ alloc_t[r]·x_t ≥ demand[r] for every r,  x ≥ 0,
//
// whose dual (max demand·w s.t. alloc_t·w ≤ price_t, w ≥ 0) prices each unit of resource; w is
// read off the primal optimum's basis and scaled into dual feasibility, so demand·w is a valid
// bound even when the numerics are off. It then tightens the bound with what each pod may use: a pod limited to offerings
// whose price exceeds the value w gives their capacity (another architecture, a pricier zone its
// spread or volume pins it to) pays at least that premium. For any w ≥ 0, pricing offering o's
// capacity at w·price_o/(alloc_o·w) is dual-feasible for the LP where every pod class covers its
// demand from the offerings it is compatible with, so the sum over classes of
// (demand_c·w)·min over compatible o of price_o/(alloc_o·w) is a valid bound too; the result is the
// larger of the two.
func (s *solver) lowerBound() float64 {
	cheap, w := s.resourceBound()
	if w == nil || s.planCost() <= lpWorthIt*cheap {
		return cheap
	}
	return math.Max(cheap, s.assignmentBound(w))
}

// bound is lowerBound, computed once per demand. The passes after placement move pods only
// between planned nodes of a pool (zone-locked pods within their zone), so the demand the bound
// covers does not change: the bound computed before the pattern LP, to decide whether that LP can
// still gain enough to run (patternWorthIt), is the one the result reports.
func (s *solver) bound() float64 {
	s.lb.current(s.demandSig())
	if !s.lb.haveV {
		s.lb.v, s.lb.haveV = s.lowerBound(), true
	}
	return s.lb.v
}

// boundMemo holds the bounds computed for the demand sig: the lower bound (v) and the
// resource-by-resource bound with its prices (cheap, w), which the choice of path after placement
// and the lower bound both read.
type boundMemo struct {
	sig          map[demandKey]int
	v, cheap     float64
	w            []float64
	haveV, haveR bool
}

// current empties the memo unless it is for sig.
func (m *boundMemo) current(sig map[demandKey]int) {
	if m.sig == nil || !maps.Equal(sig, m.sig) {
		*m = boundMemo{sig: sig}
	}
}

// demandKey is what the bound sees of a pod on a new node: its class and, when it is
// zone-constrained, the node's zone.
type demandKey struct {
	c    *class
	zone int
}

// demandSig counts the pods on new nodes by demandKey.
func (s *solver) demandSig() map[demandKey]int {
	sig := map[demandKey]int{}
	for _, n := range s.open {
		for _, c := range n.cls {
			k := demandKey{c, -1}
			if len(c.volZones) > 0 || s.effAt(c, len(c.steps)).zoneCons {
				k.zone = n.zone
			}
			sig[k]++
		}
	}
	return sig
}

// patternWorthIt: the pattern LP (the costliest pass) runs only when the plan before it costs more
// than this multiple of the lower bound, since that gap is the most it can gain; the same margin
// below which the assignment LP is not worth solving (lpWorthIt).
const patternWorthIt = lpWorthIt

// lpWorthIt: the assignment LP (for the bound and for lpPack) is only solved when the plan costs
// more than this multiple of the resource-by-resource bound; below it there is little to gain
// and the LP would dominate the solve time (on the mixed benchmark shape it never changed the
// plan and tripled the time).
const lpWorthIt = 1.04

// resourceBound is the larger of the resource-by-resource LP bound and its per-class
// refinement, with the LP's resource prices (nil without demand).
func (s *solver) resourceBound() (float64, []float64) {
	s.lb.current(s.demandSig())
	if !s.lb.haveR {
		s.lb.cheap, s.lb.w = s.computeResourceBound()
		s.lb.haveR = true
	}
	return s.lb.cheap, s.lb.w
}

func (s *solver) computeResourceBound() (float64, []float64) {
	demand := s.d.zero()
	for _, n := range s.open {
		if len(n.pods) > 0 {
			demand.add(n.used)
		}
	}
	w := s.pricesFor(demand)
	if w == nil {
		return 0, nil
	}
	global := 0.0
	for r, v := range demand {
		global += float64(v) * w[r]
	}
	return math.Max(global, s.classBound(w)), w
}

// pendingPrices sets s.w from the LP over every pending pod's demand, before placement.
func (s *solver) pendingPrices() {
	demand := s.d.zero()
	for _, c := range s.classes {
		if c.err != "" {
			continue
		}
		for range c.pods {
			demand.add(c.req)
		}
	}
	s.w = s.pricesFor(demand)
	if s.w == nil {
		s.w = make([]float64, s.d.n())
	}
}

// pricesFor solves the covering LP for demand and returns its resource prices (nil without demand).
func (s *solver) pricesFor(demand resVec) []float64 {
	var rows []int
	for r, v := range demand {
		if v > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	// The distinct (allocatable scaled by demand, price) columns.
	seen := map[string]bool{}
	var cols []lpCol
	for _, p := range s.pools {
		for _, t := range p.types {
			c := lpCol{price: t.minPrice}
			for _, r := range rows {
				c.alloc = append(c.alloc, math.Max(0, float64(t.alloc[r]))/float64(demand[r]))
			}
			key := fmtKey(c.alloc, c.price)
			if !floats0(c.alloc) && !seen[key] {
				seen[key] = true
				cols = append(cols, c)
			}
		}
	}
	if len(cols) == 0 {
		return nil
	}
	return s.resourcePrices(rows, demand, cols)
}

type lpCol struct {
	alloc []float64
	price float64
}

// resourcePrices returns per-resource prices w ≥ 0 with alloc_t·w ≤ price_t for every type: the
// dual of the covering LP, read off the primal optimum's basis (m×m solve), scaled down if needed so
// it stays feasible whatever the numerics.
func (s *solver) resourcePrices(rows []int, demand resVec, cols []lpCol) []float64 {
	m, n := len(rows), len(cols)
	w := make([]float64, len(demand))
	a := mat.NewDense(m, n+m, nil)
	c := make([]float64, n+m)
	for j, col := range cols {
		c[j] = col.price
		for i := range rows {
			a.Set(i, j, col.alloc[i])
		}
	}
	for i := 0; i < m; i++ {
		a.Set(i, n+i, -1)
	}
	b := make([]float64, m)
	for i := range b {
		b[i] = 1
	}
	scaled := make([]float64, m)
	if _, x, err := lp.Simplex(c, a, b, 1e-10, nil); err == nil {
		var basis []int
		for j := range x {
			if x[j] > 1e-9 {
				basis = append(basis, j)
			}
		}
		if len(basis) == m {
			bt := mat.NewDense(m, m, nil)
			cb := mat.NewVecDense(m, nil)
			for k, j := range basis {
				for i := 0; i < m; i++ {
					bt.Set(k, i, a.At(i, j))
				}
				cb.SetVec(k, c[j])
			}
			var sol mat.VecDense
			if err := sol.SolveVec(bt, cb); err == nil {
				for i := 0; i < m; i++ {
					scaled[i] = math.Max(0, sol.AtVec(i))
				}
			}
		}
	}
	if floats0(scaled) {
		// Fallback: price each resource at its cheapest rate, split evenly.
		for i := range rows {
			best := math.Inf(1)
			for _, col := range cols {
				if col.alloc[i] > 0 {
					best = math.Min(best, col.price/col.alloc[i])
				}
			}
			if !math.IsInf(best, 1) {
				scaled[i] = best / float64(m)
			}
		}
	}
	// Scale into feasibility: alloc·w ≤ price for every column.
	factor := 1.0
	for _, col := range cols {
		v := 0.0
		for i := range rows {
			v += col.alloc[i] * scaled[i]
		}
		if v > 0 {
			factor = math.Min(factor, col.price/v)
		}
	}
	for i, r := range rows {
		w[r] = scaled[i] * factor / float64(demand[r])
	}
	return w
}

func floats0(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// classBound is the per-class tightening described on lowerBound.
func (s *solver) classBound(w []float64) float64 {
	value := func(v resVec) float64 {
		x := 0.0
		for r, q := range v {
			x += float64(q) * w[r]
		}
		return x
	}
	type key struct {
		c    *class
		zone int
	}
	demand := map[key]resVec{}
	var order []key
	for _, n := range s.open {
		for i, c := range n.cls {
			k := key{c, -1}
			if len(c.volZones) > 0 || s.effAt(c, len(c.steps)).zoneCons {
				k.zone = n.zone
			}
			d, ok := demand[k]
			if !ok {
				d = s.d.zero()
				order = append(order, k)
			}
			d.add(n.cls[i].req)
			demand[k] = d
		}
	}
	ratios := map[string]float64{}
	total := 0.0
	for _, k := range order {
		e := s.effAt(k.c, len(k.c.steps))
		sig := ""
		for _, a := range e.alts {
			sig += a.sig + "||"
		}
		rk := sig + "@" + string(rune('A'+k.zone+1))
		for _, t := range k.c.tols {
			rk += "|" + t.Key + "=" + t.Value + ":" + string(t.Effect) + string(t.Operator)
		}
		ratio, ok := ratios[rk]
		if !ok {
			ratio = math.Inf(1)
			for _, p := range s.pools {
				if _, bad := untolerated(k.c.tols, p.taints); bad {
					continue
				}
				for _, a := range e.alts {
					if a.conflict != "" {
						continue
					}
					zm := p.zoneMask & a.zoneMask
					if k.zone >= 0 {
						zm &= 1 << uint(k.zone)
					}
					cm := p.ctMask & a.ctMask
					s.compat(p, a).each(func(i int) bool {
						t := p.types[i]
						pr, _ := t.price(zm, cm)
						if v := value(t.alloc); pr >= 0 && v > 0 {
							ratio = math.Min(ratio, pr/v)
						}
						return true
					})
				}
			}
			ratios[rk] = ratio
		}
		if math.IsInf(ratio, 1) {
			return 0
		}
		total += ratio * value(demand[k])
	}
	return total
}

func fmtKey(v []float64, price float64) string {
	buf := make([]byte, 0, 8*(len(v)+1))
	for _, x := range append(v, price) {
		bits := math.Float64bits(x)
		for i := 0; i < 8; i++ {
			buf = append(buf, byte(bits>>(8*i)))
		}
	}
	return string(buf)
}
