package solver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/requirements"
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
	cause Cause  // set by noteCause; otherwise derived from stage
	pool  string // the NodePool a CauseLimits names
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
	taint *corev1.Taint // an untolerated taint; its text is built only when read (msg)
	te    topoErr
}

// untoleratedAttempt is the attempt that failed on taint t.
func untoleratedAttempt(t *corev1.Taint) attempt {
	return attempt{perm: true, stage: stageTaint, taint: t}
}

func (a attempt) text() string {
	if a.taint != nil {
		return "taint " + a.taint.ToString()
	}
	if a.msg != "" {
		return a.msg
	}
	return a.te.String()
}

const maxRounds = 6

// premiumSlack is the premium below which growing a node counts as free.
const premiumSlack = 0.02

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
		for u := c.unschedulable(); c.next < len(c.pods); c.next++ {
			u.Pod = c.pods[c.next]
			s.unsched = append(s.unsched, u)
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
			c.fail.note(stageReqs, fmt.Sprintf("node selection can never match: %s", mustGet(a.reqs, a.conflict).Describe(a.conflict)))
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
		// Growing a node: take the first one without a premium; otherwise open a fresh node, and
		// only when that fails grow the node with the least premium.
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
			prem := s.premium(c, e, mv)
			if prem <= 1+premiumSlack {
				best, bestPrem = mv, prem
				break
			}
			if best == nil || prem < bestPrem {
				best, bestPrem = mv, prem
			}
		}
		if best != nil && bestPrem <= 1+premiumSlack {
			if at := s.commitMove(c, best); at.k > 0 {
				return at.k
			}
		}
		if k := s.createNode(c, e, a, maxK); k > 0 {
			return k
		}
		if best != nil && bestPrem > 1+premiumSlack {
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
	case at.stage == stageTaint && (at.taint != nil || at.msg != ""):
		return "no NodePool, and the existing nodes have untolerated " + at.text()
	case at.stage == stageReqs:
		return "no NodePool, and no existing node matches the pod's node selection"
	}
	return "no NodePool, and no existing node has room for the pod"
}

func mustGet(rs requirements.Set, key string) requirements.Requirement {
	r, _ := rs.Get(key)
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
	if i := untoleratedAt(c.tols, n.taints); i >= 0 {
		return untoleratedAttempt(&n.taints[i])
	}
	if e.avoidPrefer {
		if _, bad := untolerated(c.tols, n.preferTaints); bad {
			return attempt{perm: true, stage: stageTaint}
		}
	}
	if len(a.reqs) > 0 && !a.reqs.MatchesLabels(n.ex.Labels, n.name) {
		return attempt{perm: true, stage: stageReqs}
	}
	if !fitsIn(n.used, c.req, n.alloc) {
		return attempt{perm: true, stage: stageResources}
	}
	if len(c.ports) > 0 && !portsFree(n.ports, c.ports) {
		return attempt{perm: true, stage: stageResources, msg: "host port conflict"}
	}
	if msg, ok := s.volumesFit(c, n); !ok {
		return attempt{perm: true, stage: stageResources, msg: msg}
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
	s.attachVolumes(c, n)
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
func (s *solver) commitNew(c *class, n *node, k int, cand bitset, newReqs requirements.Set, zm, cm uint64, zone int) (bool, int, string) {
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
		slack := p.slack()
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
