package solver

import (
	"math"
	"math/bits"

	"github.com/joist-dev/joist/requirements"
)

// move is a checked placement on a planned node, ready to commit.
type move struct {
	n       *node
	k       int
	cand    bitset
	newReqs requirements.Set
	zm, cm  uint64
	zone    int
}

func (s *solver) tryNew(c *class, e *eff, a *alt, n *node, maxK int, strict bool) attempt {
	mv, at := s.prepareNew(c, e, a, n, maxK, strict)
	if mv == nil {
		return at
	}
	return s.commitMove(c, mv)
}

func (s *solver) commitMove(c *class, mv *move) attempt {
	for k := mv.k; k > 0; k = k / 2 {
		if ok, stage, msg := s.commitNew(c, mv.n, k, mv.cand, mv.newReqs, mv.zm, mv.cm, mv.zone); ok {
			return attempt{k: k}
		} else if k == 1 {
			return attempt{perm: true, stage: stage, msg: msg}
		}
	}
	return attempt{perm: true}
}

// premium rates growing a node by a move (1 = no premium). It multiplies two factors: the zone
// and capacity-type premium of the grown type over its cheapest offering anywhere, counted only for
// pods free to choose their zone; and, when the pod narrows the node's requirements (another
// architecture, zone, capacity type), how much the node's price per unit of capacity rises, so a
// pod does not drag a node full of others onto a dearer type.
func (s *solver) premium(c *class, e *eff, mv *move) float64 {
	n := mv.n
	p := n.pool
	used := n.used.clone()
	for i := 0; i < mv.k; i++ {
		used.add(c.req)
	}
	var grown *itype
	price := 0.0
	mv.cand.each(func(i int) bool {
		t := p.types[i]
		if !lessEq(used, t.alloc) {
			return true
		}
		if pr, _ := t.price(mv.zm, mv.cm); pr >= 0 {
			grown, price = t, pr
			return false
		}
		return true
	})
	if grown == nil || grown.minPrice <= 0 {
		return 1e9
	}
	prem := 1.0
	if !e.zoneCons && len(c.volZones) == 0 {
		prem = price / grown.minPrice
	}
	narrows := mv.zm != n.zoneMask || mv.cm != n.ctMask || len(mv.newReqs) != len(n.reqs)
	if narrows && len(n.pods) > 0 && n.cheap >= 0 && s.value(grown) > 0 {
		cur := p.types[n.cheap]
		if curPrice, _ := cur.price(n.zoneMask, n.ctMask); curPrice > 0 && s.value(cur) > 0 {
			if f := (price / s.value(grown)) / (curPrice / s.value(cur)); f > 1 {
				prem *= f
			}
		}
	}
	return prem
}

// value is what a type's allocatable is worth at the resource prices w.
func (s *solver) value(t *itype) float64 {
	v := 0.0
	for r, q := range t.alloc {
		if q > 0 {
			v += float64(q) * s.w[r]
		}
	}
	return v
}

// prepareNew checks a placement of up to maxK pods of c on planned node n without changing state.
func (s *solver) prepareNew(c *class, e *eff, a *alt, n *node, maxK int, strict bool) (*move, attempt) {
	p := n.pool
	if i := untoleratedAt(c.tols, p.taints); i >= 0 {
		return nil, untoleratedAttempt(&p.taints[i])
	}
	if e.avoidPrefer {
		if _, bad := untolerated(c.tols, p.preferTaints); bad {
			return nil, attempt{perm: true, stage: stageTaint}
		}
	}
	if strict {
		if n.cheap < 0 || !fitsIn(n.used, c.req, p.types[n.cheap].alloc) {
			return nil, attempt{}
		}
	} else if !fitsIn(n.used, c.req, n.maxAlloc) {
		return nil, attempt{perm: true, stage: stageResources}
	}
	if len(c.ports) > 0 && !portsFree(n.ports, c.ports) {
		return nil, attempt{perm: true, stage: stageResources}
	}
	if ok, perm, te := s.topoHost(c, e, n.id); !ok {
		return nil, attempt{perm: perm, stage: stageTopology, te: te}
	}
	zone := n.zone
	if zone >= 0 {
		if ok, perm, te := s.topoZone(c, e, zone); !ok {
			return nil, attempt{perm: perm, stage: stageTopology, te: te}
		}
	}
	newReqs := n.reqs
	cand := n.options
	zm, cm := n.zoneMask&a.zoneMask, n.ctMask&a.ctMask
	if zm == 0 || cm == 0 {
		return nil, attempt{perm: true, stage: stageReqs}
	}
	if len(a.reqs) > 0 {
		newReqs = s.and(n.reqs, a)
		if newReqs.Conflict() != "" {
			return nil, attempt{perm: true, stage: stageReqs}
		}
		cand = cand.and(s.compat(p, a))
	}
	cacheable := len(a.reqs) == 0
	if zm != n.zoneMask || cm != n.ctMask {
		cand = s.filter(cand, func(t *itype) bool { return t.zonesFor(zm, cm) != 0 }, p.types)
		cacheable = false
	}
	if len(a.reqs) > 0 && cand.empty() {
		return nil, attempt{perm: true, stage: stageReqs}
	}
	holds := func(t *itype) bool { return fitsIn(n.used, c.req, t.alloc) }
	if zone < 0 && bits.OnesCount64(zm) == 1 {
		zone = bits.TrailingZeros64(zm)
		if ok, perm, te := s.topoZone(c, e, zone); !ok {
			return nil, attempt{perm: perm, stage: stageTopology, te: te}
		}
	}
	if zone < 0 && (e.zoneCons || c.zoneRelevant) {
		offered, prices := s.zoneInfo(n, cand, zm, cm, cacheable)
		if len(n.pods) > 0 {
			// Pinning a node that already holds pods must not move them to a pricier zone.
			cheapest := math.Inf(1)
			for u := offered; u != 0; u &= u - 1 {
				cheapest = math.Min(cheapest, prices[bits.TrailingZeros64(u)])
			}
			for u := offered; u != 0; u &= u - 1 {
				if z := bits.TrailingZeros64(u); prices[z] > cheapest*(1+1e-9) {
					offered &^= 1 << uint(z)
				}
			}
		}
		var last attempt
		chosen := -1
		for _, z := range s.zoneOrder(c, e, offered, func(z int) float64 { return prices[z] }) {
			if ok, _, te := s.topoZone(c, e, z); !ok {
				last = attempt{stage: stageTopology, te: te}
				continue
			}
			zb := uint64(1) << uint(z)
			if strict {
				if p.types[n.cheap].zonesFor(zb, cm) == 0 {
					continue
				}
			} else {
				found := false
				cand.eachDesc(func(i int) bool {
					t := p.types[i]
					found = t.zonesFor(zb, cm) != 0 && holds(t)
					return !found
				})
				if !found {
					continue
				}
			}
			chosen = z
			break
		}
		if chosen < 0 {
			if last.stage == 0 {
				last.stage = stageResources
			}
			return nil, last
		}
		zone, zm = chosen, 1<<uint(chosen)
		cand = s.filter(cand, func(t *itype) bool { return t.zonesFor(zm, cm) != 0 }, p.types)
	}
	k := 1
	if strict {
		t := p.types[n.cheap]
		if !cand.has(n.cheap) || t.zonesFor(zm, cm) == 0 {
			return nil, attempt{}
		}
		if e.batchable {
			k = fitCount(n.used, c.req, t.alloc, maxK)
		}
	} else {
		best := 0
		cand.eachDesc(func(i int) bool {
			t := p.types[i]
			if !holds(t) {
				return true
			}
			if !e.batchable {
				best = 1
				return false
			}
			if f := fitCount(n.used, c.req, t.alloc, maxK); f > best {
				best = f
			}
			return best < maxK
		})
		if best == 0 {
			return nil, attempt{perm: true, stage: stageResources}
		}
		k = best
	}
	return &move{n: n, k: k, cand: cand, newReqs: newReqs, zm: zm, cm: cm, zone: zone}, attempt{}
}
