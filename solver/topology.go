package solver

import (
	"fmt"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	v1 "github.com/joist-dev/joist/api/v1"
)

// group counts the pods matching one (topology key, namespaces, selector) per domain. Spread
// constraints, pod affinity and anti-affinity terms with the same triple share a group.
type group struct {
	key      string
	hostname bool
	m        podMatcher
	zoneCnt  []int32
	nodeCnt  []int32
	total    int32
	zoneOwn  []int32 // pods owning a required anti-affinity term with this group, per zone
	nodeOwn  []int32
	owned    bool
	desc     string
}

func (g *group) matches(ns string, l labels.Set) bool { return g.m.matches(ns, l) }

func grow(v []int32, id int) []int32 {
	for len(v) <= id {
		v = append(v, 0)
	}
	return v
}

func (g *group) nodeCount(id int) int32 {
	if id < len(g.nodeCnt) {
		return g.nodeCnt[id]
	}
	return 0
}

func (g *group) nodeOwners(id int) int32 {
	if id < len(g.nodeOwn) {
		return g.nodeOwn[id]
	}
	return 0
}

func (g *group) add(n *node, k int32) {
	g.total += k
	if g.hostname {
		g.nodeCnt = grow(g.nodeCnt, n.id)
		g.nodeCnt[n.id] += k
	} else if n.zone >= 0 {
		g.zoneCnt[n.zone] += k
	}
}

func (g *group) addOwner(n *node, k int32) {
	if g.hostname {
		g.nodeOwn = grow(g.nodeOwn, n.id)
		g.nodeOwn[n.id] += k
	} else if n.zone >= 0 {
		g.zoneOwn[n.zone] += k
	}
}

func (g *group) describe() string {
	if g.desc == "" {
		key := v1.LabelTopologyZone
		if g.hostname {
			key = v1.LabelHostname
		}
		g.desc = fmt.Sprintf("%s, selector %q%s", key, g.m.sel.String(), g.m.describeNS())
	}
	return g.desc
}

type spreadRef struct {
	g          *group
	maxSkew    int32
	minDomains int32
	self       bool
	policy     spreadPolicy
}

type termRef struct {
	g      *group
	self   bool
	weight int32
}

func (s *solver) group(hostname bool, m podMatcher) *group {
	key := fmt.Sprintf("%t|%s", hostname, m.id())
	if g, ok := s.groupIdx[key]; ok {
		return g
	}
	g := &group{key: key, hostname: hostname, m: m, zoneCnt: make([]int32, 64), zoneOwn: make([]int32, 64)}
	s.groupIdx[key] = g
	s.groups = append(s.groups, g)
	return g
}

// topoKind maps a topology key to hostname (true) or zone (false); other keys are not supported.
func topoKind(key string) (hostname bool, ok bool) {
	switch key {
	case v1.LabelHostname:
		return true, true
	case v1.LabelTopologyZone:
		return false, true
	}
	return false, false
}

// selectorWithKeys converts a label selector and adds matchLabelKeys (In the pod's value) and
// mismatchLabelKeys (NotIn the pod's value). A nil selector matches nothing.
func selectorWithKeys(ls *metav1.LabelSelector, podLabels map[string]string, match, mismatch []string) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	add := func(keys []string, op selection.Operator) error {
		for _, k := range keys {
			v, ok := podLabels[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, op, []string{v})
			if err != nil {
				return err
			}
			sel = sel.Add(*r)
		}
		return nil
	}
	if err := add(match, selection.In); err != nil {
		return nil, err
	}
	if err := add(mismatch, selection.NotIn); err != nil {
		return nil, err
	}
	return sel, nil
}

func (s *solver) termGroup(ownerNS string, ownerLabels map[string]string, t *corev1.PodAffinityTerm) (*group, error) {
	hostname, ok := topoKind(t.TopologyKey)
	if !ok {
		return nil, nil
	}
	m, err := s.termMatcher(ownerNS, ownerLabels, t)
	if err != nil {
		return nil, err
	}
	return s.group(hostname, m), nil
}

// countExisting adds pods bound to existing nodes to the groups, and their required
// anti-affinity terms as owners.
func (s *solver) countExisting() {
	cache := map[string][]*group{}
	for _, n := range s.existing {
		for _, p := range n.ex.Pods {
			if p == nil || finished(p) {
				continue
			}
			key := p.Namespace + "/" + labels.Set(p.Labels).String()
			gs, ok := cache[key]
			if !ok {
				for _, g := range s.groups {
					if g.matches(p.Namespace, p.Labels) {
						gs = append(gs, g)
					}
				}
				cache[key] = gs
			}
			for _, g := range gs {
				g.add(n, 1)
			}
		}
	}
}

// registerExistingAnti creates groups for the required anti-affinity of pods already bound, so
// pending pods they repel are kept out of their domains.
func (s *solver) registerExistingAnti() {
	for _, n := range s.existing {
		for _, p := range n.ex.Pods {
			if p == nil || p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
				continue
			}
			if finished(p) {
				continue
			}
			for i := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
				g, err := s.termGroup(p.Namespace, p.Labels, t)
				if err != nil || g == nil {
					continue
				}
				g.owned = true
				g.addOwner(n, 1)
			}
		}
	}
}

// topoErr is a topology failure; its message is only rendered when a reason is reported.
type topoErr struct {
	format string
	args   []any
}

func (t topoErr) String() string {
	if t.format == "" {
		return ""
	}
	args := make([]any, len(t.args))
	for i, a := range t.args {
		if g, ok := a.(*group); ok {
			args[i] = g.describe()
		} else {
			args[i] = a
		}
	}
	return fmt.Sprintf(t.format, args...)
}

// topoCheck evaluates spread, affinity and anti-affinity for placing one pod of c in the domain
// (node id, zone). permanent means no later state can make it pass for this class.
func (s *solver) topoCheck(c *class, e *eff, id, zone int) (ok, permanent bool, te topoErr) {
	if ok, perm, te := s.topoHost(c, e, id); !ok {
		return false, perm, te
	}
	return s.topoZone(c, e, zone)
}

// topoHost is the hostname half of topoCheck.
func (s *solver) topoHost(c *class, e *eff, id int) (ok, permanent bool, te topoErr) {
	for _, sp := range e.spreads {
		if !sp.g.hostname {
			continue
		}
		self := int32(0)
		if sp.self {
			self = 1
		}
		if sp.g.nodeCount(id)+self > sp.maxSkew {
			return false, true, topoErr{format: "topology spread (%s, maxSkew=%d) would be violated on every candidate node", args: []any{sp.g, sp.maxSkew}}
		}
	}
	for _, t := range e.aff {
		if !t.g.hostname || (t.g.total == 0 && t.self) {
			continue
		}
		if t.g.nodeCount(id) == 0 {
			if t.g.total == 0 {
				return false, false, topoErr{format: "pod affinity (%s): no pod matches the selector", args: []any{t.g}}
			}
			return false, false, topoErr{format: "pod affinity (%s): no node with matching pods can take it", args: []any{t.g}}
		}
	}
	for _, t := range e.anti {
		if t.g.hostname && t.g.nodeCount(id) > 0 {
			return false, true, topoErr{format: "pod anti-affinity (%s): every candidate node has a matching pod", args: []any{t.g}}
		}
	}
	for _, g := range c.repelledBy {
		if g.hostname && g.nodeOwners(id) > 0 {
			return false, true, topoErr{format: "anti-affinity of other pods (%s) excludes it from every candidate node", args: []any{g}}
		}
	}
	return true, false, topoErr{}
}

// topoZone is the zone half of topoCheck; zone -1 means the node has no zone.
func (s *solver) topoZone(c *class, e *eff, zone int) (ok, permanent bool, te topoErr) {
	if !e.zoneCons && len(c.repelledBy) == 0 {
		return true, false, topoErr{}
	}
	for _, sp := range e.spreads {
		if sp.g.hostname {
			continue
		}
		self := int32(0)
		if sp.self {
			self = 1
		}
		if zone < 0 {
			return false, true, topoErr{format: "topology spread (%s) needs a node with a zone", args: []any{sp.g}}
		}
		u := s.zoneUniverse(c, sp.policy)
		min := minZoneCount(sp.g, u)
		if int32(bits.OnesCount64(u)) < sp.minDomains {
			min = 0
		}
		if sp.g.zoneCnt[zone]+self-min > sp.maxSkew {
			return false, false, topoErr{format: "topology spread (%s, maxSkew=%d) cannot be kept in any zone", args: []any{sp.g, sp.maxSkew}}
		}
	}
	for _, t := range e.aff {
		if t.g.hostname || (t.g.total == 0 && t.self) {
			continue
		}
		if zone < 0 || t.g.zoneCnt[zone] == 0 {
			if t.g.total == 0 {
				return false, false, topoErr{format: "pod affinity (%s): no pod matches the selector", args: []any{t.g}}
			}
			return false, false, topoErr{format: "pod affinity (%s): no zone with matching pods can take it", args: []any{t.g}}
		}
	}
	for _, t := range e.anti {
		if !t.g.hostname && zone >= 0 && t.g.zoneCnt[zone] > 0 {
			return false, true, topoErr{format: "pod anti-affinity (%s): every zone has a matching pod", args: []any{t.g}}
		}
	}
	for _, g := range c.repelledBy {
		if !g.hostname && zone >= 0 && g.zoneOwn[zone] > 0 {
			return false, true, topoErr{format: "anti-affinity of other pods (%s) excludes it from every zone", args: []any{g}}
		}
	}
	return true, false, topoErr{}
}

// zoneOrder lists the zones of mask in preference order for class c: least loaded spread
// domains first, then cheapest, then by name.
func (s *solver) zoneOrder(c *class, e *eff, mask uint64, price func(z int) float64) []int {
	var zs []int
	for u := mask; u != 0; u &= u - 1 {
		zs = append(zs, bits.TrailingZeros64(u))
	}
	load := func(z int) int32 {
		var l int32
		for _, sp := range e.spreads {
			if !sp.g.hostname {
				l += sp.g.zoneCnt[z]
			}
		}
		return l
	}
	sort.SliceStable(zs, func(i, j int) bool {
		li, lj := load(zs[i]), load(zs[j])
		if li != lj {
			return li < lj
		}
		pi, pj := price(zs[i]), price(zs[j])
		if pi != pj {
			return pi < pj
		}
		return s.zones[zs[i]] < s.zones[zs[j]]
	})
	return zs
}
