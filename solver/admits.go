package solver

import "github.com/joist-dev/joist/requirements"

// admitted is the set of p's instance types whose labels rs admits (typeAdmits for each), cached
// by the requirements' signature: the packing passes ask it for the same few requirement sets
// thousands of times, and typeAdmits walks every key of every type.
//
// Sets are never changed in place (With and And build new ones), so the same backing array is the
// same set: that is looked up first, without building the signature.
func (s *solver) admitted(p *pool, rs requirements.Set) bitset {
	id := setID{pool: p.idx, n: len(rs)}
	if len(rs) > 0 {
		id.first = &rs[0]
	}
	if s.admitsByID == nil {
		s.admitsByID = map[setID]bitset{}
	}
	if b, ok := s.admitsByID[id]; ok {
		return b
	}
	key := itoa(p.idx) + "/" + rs.Signature()
	if b, ok := s.admits[key]; ok {
		s.admitsByID[id] = b
		return b
	}
	b := newBitset(len(p.types))
	for i, t := range p.types {
		if typeAdmits(p, t, rs, s.zones, s.cts) {
			b.set(i)
		}
	}
	if s.admits == nil {
		s.admits = map[string]bitset{}
	}
	s.admits[key] = b
	s.admitsByID[id] = b
	return b
}

// setID identifies a requirement set by its backing array (see admitted).
type setID struct {
	pool  int
	first *requirements.Keyed
	n     int
}

// optionsFor is the types of p that admit rs, offer an offering within the masks and hold used.
func (s *solver) optionsFor(p *pool, rs requirements.Set, used resVec, zm, cm uint64) bitset {
	out := newBitset(len(p.types))
	s.admitted(p, rs).each(func(i int) bool {
		if t := p.types[i]; lessEq(used, t.alloc) && t.zonesFor(zm, cm) != 0 {
			out.set(i)
		}
		return true
	})
	return out
}

// and is rs.And(a.reqs), cached by rs's backing array and the alternative: the fill simulation
// narrows the same node requirements by the same classes for every candidate type. Sharing the
// result also lets admitted find it by backing array.
func (s *solver) and(rs requirements.Set, a *alt) requirements.Set {
	k := andKey{a: a, n: len(rs)}
	if len(rs) > 0 {
		k.first = &rs[0]
	}
	if out, ok := s.ands[k]; ok {
		return out
	}
	out := rs.And(a.reqs)
	if s.ands == nil {
		s.ands = map[andKey]requirements.Set{}
	}
	s.ands[k] = out
	return out
}

type andKey struct {
	first *requirements.Keyed
	n     int
	a     *alt
}
