package solver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/requirements"
)

// createNode opens a new node in the highest-weight pool that can take a pod of c.
func (s *solver) createNode(c *class, e *eff, a *alt, maxK int) int {
	var taints []string
	passedTaints := false
	for _, p := range s.pools {
		if t, bad := untolerated(c.tols, p.taints); bad {
			taints = append(taints, fmt.Sprintf("NodePool %s: %s", p.name, t.ToString()))
			c.fail.note(stageTaint, "")
			continue
		}
		if e.avoidPrefer {
			if t, bad := untolerated(c.tols, p.preferTaints); bad {
				taints = append(taints, fmt.Sprintf("NodePool %s: %s", p.name, t.ToString()))
				c.fail.note(stageTaint, "")
				continue
			}
		}
		passedTaints = true
		if x := p.reqs.And(a.reqs); x.Conflict() != "" {
			k := x.Conflict()
			pr, _ := p.reqs.Get(k)
			c.fail.note(stageReqs, fmt.Sprintf("NodePool %s requires %s; the pod requires %s", p.name, pr.Describe(k), mustGet(a.reqs, k).Describe(k)))
			continue
		}
		cb := s.compat(p, a)
		if cb.empty() {
			c.fail.note(stageReqs, s.noTypeMsg(p, c, a))
			continue
		}
		fit := s.filter(cb, func(t *itype) bool { return lessEq(c.req, t.alloc) }, p.types)
		if fit.empty() {
			c.fail.note(stageResources, s.resourceMsg(p, c, cb))
			continue
		}
		options := p.all
		if p.limited {
			slack := p.slack()
			options = s.filter(p.all, func(t *itype) bool { return lessEq(t.capacity, slack) }, p.types)
			if options.and(fit).empty() {
				need := p.types[cheapest(p, fit, p.zoneMask, p.ctMask)].capacity
				c.fail.noteCause(stageLimits, CauseLimits, p.name, s.limitMsg(p, need, slack))
				continue
			}
		}
		n := &node{id: len(s.nodes), name: fmt.Sprintf("new-%d", len(s.open)), pool: p, zone: -1, cheap: -1,
			used: s.d.zero(), reqs: p.reqs, zoneMask: p.zoneMask, ctMask: p.ctMask, options: options}
		n.maxAlloc = s.d.zero()
		options.each(func(i int) bool {
			for r, v := range p.types[i].alloc {
				if v > n.maxAlloc[r] {
					n.maxAlloc[r] = v
				}
			}
			return true
		})
		at := s.tryNew(c, e, a, n, maxK, false)
		if at.k > 0 {
			s.nodes = append(s.nodes, n)
			s.open = append(s.open, n)
			return at.k
		}
		msg := at.text()
		if msg == "" {
			msg = fmt.Sprintf("no instance type in NodePool %s can take the pod with its constraints", p.name)
		}
		c.fail.noteCause(max(at.stage, stageTopology), causeOf(at.stage, stageTopology), p.name, msg)
	}
	if len(s.pools) == 0 {
		if c.fail.stage == stageNone {
			c.fail.noteCause(stageReqs, CauseNoCapacity, "", "no NodePool, and no existing node fits")
		}
	} else if !passedTaints {
		uniq := map[string]bool{}
		var only string
		for _, t := range taints {
			parts := strings.SplitN(t, ": ", 2)
			uniq[parts[1]] = true
			only = parts[1]
		}
		if len(uniq) == 1 {
			c.fail = failure{stage: stageTaint, msg: "no NodePool tolerates taint " + only}
		} else {
			c.fail = failure{stage: stageTaint, msg: "no NodePool tolerates the pod: " + strings.Join(taints, "; ")}
		}
	}
	return 0
}

func (s *solver) noTypeMsg(p *pool, c *class, a *alt) string {
	for _, kr := range a.reqs {
		one := requirements.Set{kr}
		found := false
		for _, t := range p.types {
			if typeAdmits(p, t, one, s.zones, s.cts) {
				found = true
				break
			}
		}
		if !found {
			msg := fmt.Sprintf("no instance type in NodePool %s matches %s", p.name, kr.Describe(kr.Key))
			if kr.Key == "topology.kubernetes.io/zone" && len(c.volZones) > 0 {
				msg += " (zone pinned by the pod's volumes)"
			}
			return msg
		}
	}
	var parts []string
	for _, kr := range a.reqs {
		parts = append(parts, kr.Describe(kr.Key))
	}
	return fmt.Sprintf("no instance type in NodePool %s matches %s together", p.name, strings.Join(parts, ", "))
}

func (s *solver) resourceMsg(p *pool, c *class, cb bitset) string {
	maxAlloc, maxRaw := s.d.zero(), s.d.zero()
	cb.each(func(i int) bool {
		t := p.types[i]
		for r := range t.alloc {
			maxAlloc[r] = max(maxAlloc[r], t.alloc[r])
			maxRaw[r] = max(maxRaw[r], t.alloc[r]+t.ds[r])
		}
		return true
	})
	for r, v := range c.req {
		if v > maxAlloc[r] {
			msg := fmt.Sprintf("no instance type offers %s %s", describeMilli(s.d.names[r], v), s.d.names[r])
			if v <= maxRaw[r] {
				msg += " after daemonset overhead"
			}
			return msg
		}
	}
	var parts []string
	for r, v := range c.req {
		if v > 0 && s.d.names[r] != corev1.ResourcePods {
			parts = append(parts, fmt.Sprintf("%s=%s", s.d.names[r], describeMilli(s.d.names[r], v)))
		}
	}
	return fmt.Sprintf("no instance type offers %s together", strings.Join(parts, ", "))
}

func (s *solver) limitMsg(p *pool, need, slack resVec) string {
	for r := range need {
		if need[r] > slack[r] {
			name := s.d.names[r]
			if q, ok := p.np.Spec.Limits[name]; ok {
				return fmt.Sprintf("NodePool %s would exceed limits.%s=%s", p.name, name, q.String())
			}
			return fmt.Sprintf("NodePool %s would exceed limits.%s", p.name, name)
		}
	}
	return fmt.Sprintf("NodePool %s would exceed its limits", p.name)
}

// minValuesMsg checks the pool's minValues against the options left; "" when satisfied.
func (s *solver) minValuesMsg(p *pool, opts bitset, rs requirements.Set, zm, cm uint64) string {
	for _, mv := range p.minValues {
		vals := map[string]bool{}
		r, hasR := rs.Get(mv.key)
		opts.each(func(i int) bool {
			t := p.types[i]
			switch mv.key {
			case "topology.kubernetes.io/zone":
				for _, o := range t.offers {
					if zm&(1<<uint(o.zone)) != 0 && cm&(1<<uint(o.ct)) != 0 {
						vals[o.o.Zone] = true
					}
				}
			case "karpenter.sh/capacity-type":
				for _, o := range t.offers {
					if zm&(1<<uint(o.zone)) != 0 && cm&(1<<uint(o.ct)) != 0 {
						vals[o.o.CapacityType] = true
					}
				}
			default:
				if v, present, resolved := p.labelOf(t, mv.key); resolved && present {
					vals[v] = true
				} else if allowed, finite := r.Finite(); !resolved && hasR && finite {
					for _, v := range allowed {
						vals[v] = true
					}
				}
			}
			return true
		})
		if len(vals) < mv.n {
			return fmt.Sprintf("NodePool %s requires minValues=%d for %s; only %d would remain", p.name, mv.n, mv.key, len(vals))
		}
	}
	return ""
}
