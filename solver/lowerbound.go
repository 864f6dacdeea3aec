package solver

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// lowerBound is the LP relaxation of covering the demand placed on new nodes, resource by
// resource, with fractional counts of every instance type at its cheapest offering:
//
//	minimize Σ price_t·x_t  subject to  Σ alloc_t[r]·x_t ≥ demand[r] for every r,  x ≥ 0.
//
// Every integral plan is feasible for it, so its optimum bounds the plan's cost from below.
func (s *solver) lowerBound() float64 {
	demand := s.d.zero()
	for _, n := range s.open {
		if len(n.pods) > 0 {
			demand.add(n.used)
		}
	}
	var rows []int
	for r, v := range demand {
		if v > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return 0
	}
	type col struct {
		alloc []float64
		price float64
	}
	seen := map[string]bool{}
	var cols []col
	for _, p := range s.pools {
		for _, t := range p.types {
			c := col{price: t.minPrice}
			useful := false
			for _, r := range rows {
				a := math.Max(0, float64(t.alloc[r])) / float64(demand[r])
				c.alloc = append(c.alloc, a)
				useful = useful || a > 0
			}
			if !useful {
				continue
			}
			key := fmtKey(c.alloc, c.price)
			if seen[key] {
				continue
			}
			seen[key] = true
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return 0
	}
	sort.SliceStable(cols, func(i, j int) bool { return cols[i].price < cols[j].price })
	simple := 0.0
	for i := range rows {
		best := math.Inf(1)
		for _, c := range cols {
			if c.alloc[i] > 0 {
				best = math.Min(best, c.price/c.alloc[i])
			}
		}
		if !math.IsInf(best, 1) {
			simple = math.Max(simple, best)
		}
	}
	m, nv := len(rows), len(cols)
	// Standard form: [A  -I] [x; slack] = 1 (each row scaled by its demand).
	a := mat.NewDense(m, nv+m, nil)
	c := make([]float64, nv+m)
	for j, col := range cols {
		c[j] = col.price
		for i := range rows {
			a.Set(i, j, col.alloc[i])
		}
	}
	for i := 0; i < m; i++ {
		a.Set(i, nv+i, -1)
	}
	b := make([]float64, m)
	for i := range b {
		b[i] = 1
	}
	opt, _, err := lp.Simplex(c, a, b, 1e-10, nil)
	if err != nil || math.IsNaN(opt) || opt < simple {
		return simple
	}
	return opt
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
