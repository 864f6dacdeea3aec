package solver

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	stageNone = iota
	stageTaint
	stageReqs
	stageResources
	stageLimits
	stageTopology
)

// failure is the furthest stage a placement attempt reached and why it stopped there.
type failure struct {
	stage int
	msg   string
	retry bool
}

func (f *failure) note(stage int, msg string) {
	if stage > f.stage {
		*f = failure{stage: stage, msg: msg, retry: stage == stageTopology}
	}
}

// attempt is the outcome of trying one node.
type attempt struct {
	k     int
	perm  bool
	stage int
	msg   string
	te    topoErr
}

func (a attempt) text() string {
	if a.msg != "" {
		return a.msg
	}
	return a.te.String()
}

const maxRounds = 6

// place runs the class loop; classes held back by pod affinity to pods not yet placed are retried
// while a round makes progress.
func (s *solver) place() {
	var pending []*class
	for _, c := range s.classes {
		if c.err == "" {
			pending = append(pending, c)
		}
	}
	for round := 0; len(pending) > 0 && round < maxRounds; round++ {
		progress := false
		var retry []*class
		for _, c := range pending {
			before := c.next
			s.placeClass(c)
			if c.next > before {
				progress = true
			}
			if c.next < len(c.pods) && c.fail.retry {
				retry = append(retry, c)
			}
		}
		if !progress {
			break
		}
		for _, c := range retry {
			c.level, c.curTag = 0, -1
		}
		pending = retry
	}
	for _, c := range s.classes {
		msg := c.err
		if msg == "" {
			msg = c.fail.msg
		}
		if msg == "" {
			msg = "no node can take the pod"
		}
		for ; c.next < len(c.pods); c.next++ {
			s.unsched = append(s.unsched, Unschedulable{Pod: c.pods[c.next], Reason: msg})
		}
	}
}

func (s *solver) placeClass(c *class) {
	for c.next < len(c.pods) {
		e := s.effAt(c, c.level)
		if k := s.placeSome(c, e, len(c.pods)-c.next); k > 0 {
			c.next += k
			continue
		}
		if c.level < len(c.steps) {
			c.level++
			continue
		}
		return
	}
}

// placeSome places up to maxK pods of c (more than one only for classes without per-pod
// constraints): existing nodes first, then planned nodes without upgrading their cheapest type,
// then planned nodes with an upgrade, then a new node.
func (s *solver) placeSome(c *class, e *eff, maxK int) int {
	c.fail = failure{}
	for ai, a := range e.alts {
		if a.conflict != "" {
			c.fail.note(stageReqs, fmt.Sprintf("node selection can never match: %s", describeReq(a.conflict, mustGet(a.reqs, a.conflict))))
			continue
		}
		tag := c.level*1024 + ai
		if c.curTag != tag {
			c.curTag, c.curEx, c.curNew = tag, 0, 0
		}
		for i := c.curEx; i < len(s.existing); i++ {
			at := s.tryExisting(c, e, a, s.existing[i], maxK)
			if at.k > 0 {
				return at.k
			}
			if len(s.pools) == 0 {
				c.fail.note(at.stage, existingMsg(at))
			}
			if at.perm && i == c.curEx {
				c.curEx++
			}
		}
		if c.curNew < s.firstLive {
			c.curNew = s.firstLive
		}
		for i := c.curNew; i < len(s.open); i++ {
			n := s.open[i]
			if n.dead {
				if i == c.curNew {
					c.curNew++
				}
				continue
			}
			at := s.tryNew(c, e, a, n, maxK, true)
			if at.k > 0 {
				return at.k
			}
			if at.perm && i == c.curNew {
				c.curNew++
			}
		}
		// Growing a node: take the first one whose grown type carries no zone or capacity-type
		// premium; otherwise a fresh node when the pod could go anywhere, else the least premium.
		var best *move
		bestPrem := 0.0
		for i := c.curNew; i < len(s.open); i++ {
			n := s.open[i]
			if n.dead {
				continue
			}
			mv, _ := s.prepareNew(c, e, a, n, maxK, false)
			if mv == nil {
				continue
			}
			prem := s.premium(c, mv)
			if prem <= 1+1e-9 {
				best, bestPrem = mv, prem
				break
			}
			if best == nil || prem < bestPrem {
				best, bestPrem = mv, prem
			}
		}
		free := !e.zoneCons && !c.zoneRelevant && a.zoneMask == ^uint64(0) && a.ctMask == ^uint64(0)
		if best != nil && (bestPrem <= 1+1e-9 || !free) {
			if at := s.commitMove(c, best); at.k > 0 {
				return at.k
			}
		}
		if k := s.createNode(c, e, a, maxK); k > 0 {
			return k
		}
		if best != nil && bestPrem > 1+1e-9 && free {
			if at := s.commitMove(c, best); at.k > 0 {
				return at.k
			}
		}
	}
	return 0
}

func existingMsg(at attempt) string {
	switch {
	case at.stage == stageTopology:
		return at.text()
	case at.stage == stageTaint && at.msg != "":
		return "no NodePool, and the existing nodes have untolerated " + at.msg
	case at.stage == stageReqs:
		return "no NodePool, and no existing node matches the pod's node selection"
	}
	return "no NodePool, and no existing node has room for the pod"
}

func mustGet(rs reqSet, key string) req {
	r, _ := rs.get(key)
	return r
}

func fitCount(used, req, alloc resVec, maxK int) int {
	k := maxK
	for i := range req {
		if req[i] <= 0 {
			continue
		}
		free := alloc[i] - used[i]
		if free < req[i] {
			return 0
		}
		if f := int(free / req[i]); f < k {
			k = f
		}
	}
	return k
}

func (s *solver) tryExisting(c *class, e *eff, a *alt, n *node, maxK int) attempt {
	if t, bad := untolerated(c.tols, n.taints); bad {
		return attempt{perm: true, stage: stageTaint, msg: "taint " + t.ToString()}
	}
	if e.avoidPrefer {
		if _, bad := untolerated(c.tols, n.preferTaints); bad {
			return attempt{perm: true, stage: stageTaint}
		}
	}
	if len(a.reqs) > 0 && !a.reqs.matchesLabels(n.ex.Labels, n.name) {
		return attempt{perm: true, stage: stageReqs}
	}
	if !fitsIn(n.used, c.req, n.alloc) {
		return attempt{perm: true, stage: stageResources}
	}
	if len(c.ports) > 0 && !portsFree(n.ports, c.ports) {
		return attempt{perm: true, stage: stageResources, msg: "host port conflict"}
	}
	if ok, perm, te := s.topoCheck(c, e, n.id, n.zone); !ok {
		return attempt{perm: perm, stage: stageTopology, te: te}
	}
	k := 1
	if e.batchable {
		k = fitCount(n.used, c.req, n.alloc, maxK)
	}
	for i := 0; i < k; i++ {
		n.used.add(c.req)
	}
	s.assign(c, n, k)
	return attempt{k: k}
}

// assign records k pods of c on n.
func (s *solver) assign(c *class, n *node, k int) {
	n.pods = append(n.pods, c.pods[c.next:c.next+k]...)
	for i := 0; i < k; i++ {
		n.ports = append(n.ports, c.ports...)
		n.cls = append(n.cls, c)
	}
	for _, g := range c.memberOf {
		g.add(n, int32(k))
	}
	for _, t := range c.hardAnti {
		t.g.addOwner(n, int32(k))
	}
}

func (s *solver) filter(b bitset, keep func(t *itype) bool, types []*itype) bitset {
	out := newBitset(len(types))
	b.each(func(i int) bool {
		if keep(types[i]) {
			out.set(i)
		}
		return true
	})
	return out
}

// compat is the set of a pool's instance types that can satisfy an alternative (cached).
func (s *solver) compat(p *pool, a *alt) bitset {
	if b, ok := p.compat[a.sig]; ok {
		return b
	}
	b := newBitset(len(p.types))
	for i, t := range p.types {
		if typeAdmits(p, t, a.reqs, s.zones, s.cts) {
			b.set(i)
		}
	}
	p.compat[a.sig] = b
	return b
}

// move is a checked placement on a planned node, ready to commit.
type move struct {
	n       *node
	k       int
	cand    bitset
	newReqs reqSet
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

// premium is how much more than its cheapest price anywhere the type a move grows the node into
// costs under the node's zone and capacity-type masks (1 = no premium).
func (s *solver) premium(c *class, mv *move) float64 {
	p := mv.n.pool
	used := mv.n.used.clone()
	for i := 0; i < mv.k; i++ {
		used.add(c.req)
	}
	prem := 0.0
	mv.cand.each(func(i int) bool {
		t := p.types[i]
		if !lessEq(used, t.alloc) {
			return true
		}
		if pr, _ := t.price(mv.zm, mv.cm); pr >= 0 && t.minPrice > 0 {
			prem = pr / t.minPrice
			return false
		}
		return true
	})
	if prem == 0 {
		return 1e9
	}
	return prem
}

// prepareNew checks a placement of up to maxK pods of c on planned node n without changing state.
func (s *solver) prepareNew(c *class, e *eff, a *alt, n *node, maxK int, strict bool) (*move, attempt) {
	p := n.pool
	if t, bad := untolerated(c.tols, p.taints); bad {
		return nil, attempt{perm: true, stage: stageTaint, msg: "taint " + t.ToString()}
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
		newReqs = n.reqs.and(a.reqs)
		if newReqs.conflict() != "" {
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

// zoneInfo returns the zones the candidate types offer and the cheapest price in each; it is
// cached per node while the node's options are unchanged.
func (s *solver) zoneInfo(n *node, cand bitset, zm, cm uint64, cacheable bool) (uint64, []float64) {
	if cacheable && n.zinfoVer == n.ver && n.zprice != nil {
		return n.zoffered, n.zprice
	}
	prices := make([]float64, len(s.zones))
	var offered uint64
	p := n.pool
	cand.each(func(i int) bool {
		for _, o := range p.types[i].offers {
			zb := uint64(1) << uint(o.zone)
			if zm&zb == 0 || cm&(1<<uint(o.ct)) == 0 {
				continue
			}
			if offered&zb == 0 || o.price < prices[o.zone] {
				prices[o.zone] = o.price
			}
			offered |= zb
		}
		return true
	})
	if cacheable {
		n.zoffered, n.zprice, n.zinfoVer = offered, prices, n.ver
	}
	return offered, prices
}

// commitNew adds k pods of c to a planned node, narrowing its options to the types that still
// hold everything and keeping the pool within its limits and minValues.
func (s *solver) commitNew(c *class, n *node, k int, cand bitset, newReqs reqSet, zm, cm uint64, zone int) (bool, int, string) {
	p := n.pool
	used := n.used.clone()
	for i := 0; i < k; i++ {
		used.add(c.req)
	}
	opts := s.filter(cand, func(t *itype) bool { return lessEq(used, t.alloc) }, p.types)
	if opts.empty() {
		return false, stageResources, ""
	}
	cheap := cheapest(p, opts, zm, cm)
	if p.limited {
		slack := p.remaining.clone()
		slack.sub(p.committed)
		if n.commit != nil {
			slack.add(n.commit)
		}
		if !lessEq(p.types[cheap].capacity, slack) {
			opts = s.filter(opts, func(t *itype) bool { return lessEq(t.capacity, slack) }, p.types)
			if opts.empty() {
				return false, stageLimits, s.limitMsg(p, p.types[cheap].capacity, slack)
			}
			cheap = cheapest(p, opts, zm, cm)
		}
	}
	if msg := s.minValuesMsg(p, opts, newReqs, zm, cm); msg != "" {
		return false, stageReqs, msg
	}
	n.used, n.options, n.reqs, n.zoneMask, n.ctMask, n.cheap = used, opts, newReqs, zm, cm, cheap
	n.ver++
	if zone >= 0 {
		n.zone = zone
	}
	if p.limited {
		if n.commit != nil {
			p.committed.sub(n.commit)
		}
		n.commit = p.types[cheap].capacity
		p.committed.add(n.commit)
	}
	n.maxAlloc = s.d.zero()
	opts.each(func(i int) bool {
		for r, v := range p.types[i].alloc {
			if v > n.maxAlloc[r] {
				n.maxAlloc[r] = v
			}
		}
		return true
	})
	s.assign(c, n, k)
	for r := range n.used {
		if s.minReq != nil && n.maxAlloc[r]-n.used[r] < s.minReq[r] {
			n.dead = true
		}
	}
	for s.firstLive < len(s.open) && s.open[s.firstLive].dead {
		s.firstLive++
	}
	return true, 0, ""
}

func cheapest(p *pool, opts bitset, zm, cm uint64) int {
	best, bestPrice := -1, 0.0
	opts.each(func(i int) bool {
		if pr, _ := p.types[i].price(zm, cm); pr >= 0 && (best < 0 || pr < bestPrice) {
			best, bestPrice = i, pr
		}
		return true
	})
	return best
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
func (s *solver) minValuesMsg(p *pool, opts bitset, rs reqSet, zm, cm uint64) string {
	for _, mv := range p.minValues {
		vals := map[string]bool{}
		r, hasR := rs.get(mv.key)
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
				} else if !resolved && hasR && !r.any {
					for _, v := range r.values {
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
		if x := p.reqs.and(a.reqs); x.conflict() != "" {
			k := x.conflict()
			pr, _ := p.reqs.get(k)
			c.fail.note(stageReqs, fmt.Sprintf("NodePool %s requires %s; the pod requires %s", p.name, describeReq(k, pr), describeReq(k, mustGet(a.reqs, k))))
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
			slack := p.remaining.clone()
			slack.sub(p.committed)
			options = s.filter(p.all, func(t *itype) bool { return lessEq(t.capacity, slack) }, p.types)
			if options.and(fit).empty() {
				need := p.types[cheapest(p, fit, p.zoneMask, p.ctMask)].capacity
				c.fail.note(stageLimits, s.limitMsg(p, need, slack))
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
		c.fail.note(max(at.stage, stageTopology), msg)
	}
	if len(s.pools) == 0 {
		if c.fail.stage == stageNone {
			c.fail.note(stageReqs, "no NodePool, and no existing node fits")
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
		one := reqSet{kr}
		found := false
		for _, t := range p.types {
			if typeAdmits(p, t, one, s.zones, s.cts) {
				found = true
				break
			}
		}
		if !found {
			msg := fmt.Sprintf("no instance type in NodePool %s matches %s", p.name, describeReq(kr.key, kr.req))
			if kr.key == "topology.kubernetes.io/zone" && len(c.volZones) > 0 {
				msg += " (zone pinned by the pod's volumes)"
			}
			return msg
		}
	}
	var parts []string
	for _, kr := range a.reqs {
		parts = append(parts, describeReq(kr.key, kr.req))
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
			q := quantityFromMilli(s.d.names[r], v)
			msg := fmt.Sprintf("no instance type offers %s %s", q.String(), s.d.names[r])
			if v <= maxRaw[r] {
				msg += " after daemonset overhead"
			}
			return msg
		}
	}
	var parts []string
	for r, v := range c.req {
		if v > 0 && s.d.names[r] != corev1.ResourcePods {
			q := quantityFromMilli(s.d.names[r], v)
			parts = append(parts, fmt.Sprintf("%s=%s", s.d.names[r], q.String()))
		}
	}
	return fmt.Sprintf("no instance type offers %s together", strings.Join(parts, ", "))
}
