package solver

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
)

// class is a set of pods identical for scheduling: same namespace, labels, requests and
// constraints. The solver places classes, not pods.
type class struct {
	key      string
	priority int32
	pods     []*corev1.Pod
	next     int
	ns       string
	labels   labels.Set
	spec     *corev1.PodSpec
	req      resVec

	baseAlts   []requirements.Set
	ownAlts    []requirements.Set // baseAlts before key spreads and key terms pinned keys (domains.go)
	volZones   []string
	prefNode   []weightedReqs
	tols       []corev1.Toleration
	hardSpread []*spreadRef
	softSpread []*spreadRef
	hardAff    []*termRef
	softAff    []*termRef
	hardAnti   []*termRef
	softAnti   []*termRef
	ports      []hostPort

	memberOf     []*group
	repelledBy   []*group
	zoneRelevant bool

	steps []step
	level int
	effs  map[int]*eff

	universe     [4]uint64 // zone universe per spreadPolicy
	universeDone [4]bool

	dealt    string // the key-spread domains it was dealt to (keyspread.go), for reasons
	err      string // a static reason the pods cannot be placed
	errCause Cause  // its cause; CauseInvalidSpec when unset
	fail     failure
	curTag   int
	curEx    int
	curNew   int
}

type weightedReqs struct {
	weight int32
	reqs   requirements.Set
}

type stepKind int

const (
	stepPrefAff stepKind = iota
	stepPrefAnti
	stepPrefNode
	stepSoftSpread
	stepPreferTaints
)

// step is one preference; relaxing drops steps from the front.
type step struct {
	kind stepKind
	i    int
}

// eff is the constraint set of a class at one relaxation level.
type eff struct {
	alts        []*alt
	spreads     []*spreadRef
	aff         []*termRef
	anti        []*termRef
	avoidPrefer bool
	zoneCons    bool
	batchable   bool
}

// alt is one ORed alternative of the node requirements.
type alt struct {
	reqs     requirements.Set
	sig      string
	zoneMask uint64
	ctMask   uint64
	conflict string
}

type classKey struct {
	NS          string
	Labels      map[string]string
	NodeSel     map[string]string                 `json:",omitempty"`
	Affinity    *corev1.Affinity                  `json:",omitempty"`
	Tolerations []corev1.Toleration               `json:",omitempty"`
	Spread      []corev1.TopologySpreadConstraint `json:",omitempty"`
	Ports       []string                          `json:",omitempty"`
	Claims      []string                          `json:",omitempty"`
	Req         resVec
	Priority    int32 `json:",omitempty"`
}

// prevKey is the last class key encoded and the fields it encodes.
type prevKey struct {
	k   classKey
	key string
	ok  bool
}

// same reports whether k's fields equal those p.key encodes, so that k encodes to p.key.
func (p *prevKey) same(k *classKey) bool {
	return p.ok && p.k.NS == k.NS && p.k.Priority == k.Priority && slices.Equal(p.k.Req, k.Req) &&
		(p.k.Labels == nil) == (k.Labels == nil) && maps.Equal(p.k.Labels, k.Labels) && maps.Equal(p.k.NodeSel, k.NodeSel) &&
		slices.Equal(p.k.Ports, k.Ports) && slices.Equal(p.k.Claims, k.Claims) &&
		(p.k.Affinity == k.Affinity || reflect.DeepEqual(p.k.Affinity, k.Affinity)) &&
		sameSlice(p.k.Tolerations, k.Tolerations) && sameSlice(p.k.Spread, k.Spread)
}

// sameSlice is reflect.DeepEqual for two slices, without boxing them when both are empty of the
// same nil-ness (most pods' tolerations and spread constraints).
func sameSlice[T any](a, b []T) bool {
	if len(a) == 0 && len(b) == 0 && (a == nil) == (b == nil) {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// claimNames are the keys of p's attachable volumes (PodVolumes).
func (s *solver) claimNames(p *corev1.Pod) []string {
	var out []string
	for _, v := range PodVolumes(p) {
		out = append(out, v.Key)
	}
	return out
}

// buildClasses groups the pending pods into classes, in a deterministic order.
func (s *solver) buildClasses() {
	pods := make([]*corev1.Pod, 0, len(s.in.Pods))
	for _, p := range s.in.Pods {
		if p != nil {
			pods = append(pods, p)
		}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	byKey := map[string]*class{}
	var buf strings.Builder
	var prev prevKey
	for _, p := range pods {
		req := s.d.podRequests(&p.Spec)
		ports := podHostPorts(&p.Spec)
		claims := s.claimNames(p)
		var portKeys []string
		for _, hp := range ports {
			portKeys = append(portKeys, fmt.Sprintf("%s/%s/%d", hp.proto, hp.ip, hp.port))
		}
		k := classKey{NS: p.Namespace, Labels: p.Labels, NodeSel: p.Spec.NodeSelector, Affinity: p.Spec.Affinity,
			Tolerations: p.Spec.Tolerations, Spread: p.Spec.TopologySpreadConstraints, Ports: portKeys, Claims: claims, Req: req, Priority: podPriority(p)}
		// Pods in name order come a workload at a time: a pod whose key fields equal the previous
		// pod's has its key (encoding the key is most of the grouping's time).
		if !prev.same(&k) {
			raw, err := json.Marshal(k)
			if err != nil {
				raw = []byte(fmt.Sprintf("%p", p))
			}
			buf.Reset()
			buf.Write(raw)
			prev = prevKey{k: k, key: buf.String(), ok: true}
		}
		key := prev.key
		c, ok := byKey[key]
		if !ok {
			c = &class{key: key, priority: podPriority(p), ns: p.Namespace, labels: labels.Set(p.Labels), spec: &p.Spec, req: req, ports: ports, effs: map[int]*eff{}, curTag: -1}
			s.initClass(c, claims)
			byKey[key] = c
			s.classes = append(s.classes, c)
		}
		c.pods = append(c.pods, p)
	}
	s.splitKeySpreads()
	s.dealKeyTerms()
	s.minReq = nil
	for _, c := range s.classes {
		if c.err != "" {
			continue
		}
		if s.minReq == nil {
			s.minReq = c.req.clone()
			continue
		}
		for i := range c.req {
			if c.req[i] < s.minReq[i] {
				s.minReq[i] = c.req[i]
			}
		}
	}
}

func (s *solver) initClass(c *class, claims []string) {
	spec := c.spec
	alts, err := requirements.ForPod(spec)
	if err != nil {
		c.err = fmt.Sprintf("invalid node selection: %v", err)
		return
	}
	if len(claims) > 0 {
		var zones []string
		pinned := false
		for _, cl := range claims {
			zs, ok := s.in.VolumeZones[cl]
			if !ok || len(zs) == 0 {
				continue
			}
			if !pinned {
				zones, pinned = uniqSorted(zs), true
				continue
			}
			zones = filterValues(zones, func(z string) bool { return containsSorted(uniqSorted(zs), z) })
		}
		if pinned {
			if len(zones) == 0 {
				c.err, c.errCause = fmt.Sprintf("volume claims %s pin zones that do not overlap", strings.Join(claims, ", ")), CauseVolumeZones
				return
			}
			c.volZones = zones
			for i := range alts {
				alts[i] = alts[i].With(v1.LabelTopologyZone, requirements.In(zones...))
			}
		}
	}
	// The kube-scheduler filters out nodes without the topology key of a DoNotSchedule spread. For
	// keys the spread model does not count (zone and hostname are counted), the node must at least
	// carry the key, or the launched node could never take the pod.
	for _, tsc := range spec.TopologySpreadConstraints {
		if _, counted := topoKind(tsc.TopologyKey); !counted && tsc.WhenUnsatisfiable != corev1.ScheduleAnyway {
			for i := range alts {
				alts[i] = alts[i].With(tsc.TopologyKey, requirements.Exists())
			}
		}
	}
	c.baseAlts, c.ownAlts = alts, alts
	c.tols = spec.Tolerations
	aff := spec.Affinity
	if aff != nil && aff.NodeAffinity != nil {
		for i, pt := range aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			rs, err := requirements.FromTerm(nil, &aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference)
			if err != nil || len(rs) == 0 {
				continue
			}
			c.prefNode = append(c.prefNode, weightedReqs{weight: pt.Weight, reqs: rs})
		}
	}
	for _, tsc := range spec.TopologySpreadConstraints {
		hostname, ok := topoKind(tsc.TopologyKey)
		if !ok {
			continue
		}
		sel, err := selectorWithKeys(tsc.LabelSelector, c.labels, tsc.MatchLabelKeys, nil)
		if err != nil {
			c.err = fmt.Sprintf("invalid topology spread selector: %v", err)
			return
		}
		g := s.group(hostname, podMatcher{ns: []string{c.ns}, sel: sel, nsl: s.nsLabels})
		sp := &spreadRef{g: g, maxSkew: tsc.MaxSkew, minDomains: 1, self: g.matches(c.ns, c.labels), policy: policyOf(&tsc)}
		if tsc.MinDomains != nil {
			sp.minDomains = *tsc.MinDomains
		}
		if sp.maxSkew < 1 {
			sp.maxSkew = 1
		}
		if tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			c.softSpread = append(c.softSpread, sp)
		} else {
			c.hardSpread = append(c.hardSpread, sp)
		}
	}
	terms := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) (hard, soft []*termRef, err error) {
		for i := range req {
			g, err := s.termGroup(c.ns, c.labels, &req[i])
			if err != nil {
				return nil, nil, err
			}
			if g != nil {
				hard = append(hard, &termRef{g: g, self: g.matches(c.ns, c.labels)})
			}
		}
		for i := range pref {
			g, err := s.termGroup(c.ns, c.labels, &pref[i].PodAffinityTerm)
			if err != nil {
				return nil, nil, err
			}
			if g != nil {
				soft = append(soft, &termRef{g: g, self: g.matches(c.ns, c.labels), weight: pref[i].Weight})
			}
		}
		sort.SliceStable(soft, func(i, j int) bool { return soft[i].weight < soft[j].weight })
		return hard, soft, nil
	}
	if aff != nil && aff.PodAffinity != nil {
		if c.hardAff, c.softAff, err = terms(aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			c.err = fmt.Sprintf("invalid pod affinity: %v", err)
			return
		}
	}
	if aff != nil && aff.PodAntiAffinity != nil {
		if c.hardAnti, c.softAnti, err = terms(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			c.err = fmt.Sprintf("invalid pod anti-affinity: %v", err)
			return
		}
		for _, t := range c.hardAnti {
			t.g.owned = true
		}
	}
	// Relaxation order: preferred pod affinity, preferred pod anti-affinity, preferred node
	// affinity (each lowest weight first), ScheduleAnyway spreads, then PreferNoSchedule taints.
	for i := range c.softAff {
		c.steps = append(c.steps, step{stepPrefAff, i})
	}
	for i := range c.softAnti {
		c.steps = append(c.steps, step{stepPrefAnti, i})
	}
	order := make([]int, len(c.prefNode))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return c.prefNode[order[i]].weight < c.prefNode[order[j]].weight })
	for _, i := range order {
		c.steps = append(c.steps, step{stepPrefNode, i})
	}
	for i := range c.softSpread {
		c.steps = append(c.steps, step{stepSoftSpread, i})
	}
	c.steps = append(c.steps, step{stepPreferTaints, 0})
}

// orderClasses sorts the classes for placement: largest first (cpu, then memory), then by key;
// with priorityFirst, by priority (highest first) before size.
// (Placing zone-pinned classes first was tried: it raised cost on the diverse and mixed shapes.)
func (s *solver) orderClasses() {
	sort.SliceStable(s.classes, func(i, j int) bool {
		a, b := s.classes[i], s.classes[j]
		if s.priorityFirst && a.priority != b.priority {
			return a.priority > b.priority
		}
		for _, r := range []int{0, 1} {
			if a.req[r] != b.req[r] {
				return a.req[r] > b.req[r]
			}
		}
		return a.key < b.key
	})
}

// resolveMembership computes, once all groups exist, which groups each class counts in and
// which anti-affinity groups repel it.
func (s *solver) resolveMembership() {
	for _, c := range s.classes {
		if c.err != "" {
			continue
		}
		for _, g := range s.groups {
			if !g.matches(c.ns, c.labels) {
				continue
			}
			c.memberOf = append(c.memberOf, g)
			if !g.hostname {
				c.zoneRelevant = true
			}
			if g.owned {
				c.repelledBy = append(c.repelledBy, g)
			}
		}
		for _, t := range c.hardAnti {
			if !t.g.hostname {
				c.zoneRelevant = true
			}
		}
	}
}

// effAt builds (and caches) the constraints of class c with the first level steps relaxed.
func (s *solver) effAt(c *class, level int) *eff {
	if e, ok := c.effs[level]; ok {
		return e
	}
	e := &eff{spreads: c.hardSpread, aff: c.hardAff, anti: c.hardAnti}
	var prefReqs requirements.Set
	for _, st := range c.steps[min(level, len(c.steps)):] {
		switch st.kind {
		case stepPrefAff:
			e.aff = append(append([]*termRef(nil), e.aff...), c.softAff[st.i])
		case stepPrefAnti:
			e.anti = append(append([]*termRef(nil), e.anti...), c.softAnti[st.i])
		case stepPrefNode:
			prefReqs = prefReqs.And(c.prefNode[st.i].reqs)
		case stepSoftSpread:
			e.spreads = append(append([]*spreadRef(nil), e.spreads...), c.softSpread[st.i])
		case stepPreferTaints:
			e.avoidPrefer = true
		}
	}
	for _, base := range c.baseAlts {
		rs := base.And(prefReqs)
		a := &alt{reqs: rs, sig: rs.Signature(), conflict: rs.Conflict()}
		zr, zok := rs.Get(v1.LabelTopologyZone)
		cr, cok := rs.Get(v1.CapacityTypeLabelKey)
		a.zoneMask = maskFor(zr, zok, s.zones)
		a.ctMask = maskFor(cr, cok, s.cts)
		e.alts = append(e.alts, a)
	}
	for _, sp := range e.spreads {
		if !sp.g.hostname {
			e.zoneCons = true
		}
	}
	for _, t := range append(append([]*termRef(nil), e.aff...), e.anti...) {
		if !t.g.hostname {
			e.zoneCons = true
		}
	}
	e.batchable = len(e.spreads) == 0 && len(e.aff) == 0 && len(e.anti) == 0 && len(c.ports) == 0
	c.effs[level] = e
	return e
}

// podPriority is the pod's spec.priority (set from its PriorityClass at admission), 0 when unset.
func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// priorityInverted reports whether the placement left out a pod for lack of room (limits, or the
// existing nodes' room when there is no NodePool) of higher priority than a pod it placed.
func (s *solver) priorityInverted() bool {
	lowestPlaced, highestLeft := int32(0), int32(0)
	anyPlaced, anyLeft := false, false
	for _, c := range s.classes {
		if c.err == "" && c.next > 0 && (!anyPlaced || c.priority < lowestPlaced) {
			lowestPlaced, anyPlaced = c.priority, true
		}
	}
	for _, u := range s.unsched {
		// Room ran out: a pool's limits, or (with no NodePool to launch from) the existing nodes'.
		// A pod no instance type can hold stays out whatever the order.
		switch u.Cause {
		case CauseLimits:
		case CauseResources, CauseNoCapacity:
			if len(s.pools) > 0 {
				continue
			}
		default:
			continue
		}
		if pr := podPriority(u.Pod); !anyLeft || pr > highestLeft {
			highestLeft, anyLeft = pr, true
		}
	}
	return anyPlaced && anyLeft && highestLeft > lowestPlaced
}
