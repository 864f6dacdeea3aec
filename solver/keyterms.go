package solver

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/joist-dev/joist/requirements"
)

// Required pod affinity and anti-affinity on topology keys other than zone and hostname (the
// region, capacity type, a rack or any custom node label). The packing passes count pods per zone
// and per node only, so, as for key spreads (keyspread.go), such terms are settled before placement
// by pinning the key to domains in the class's node requirements:
//   - anti-affinity: the domains holding a pod the term selects (bound pods, and pending classes
//     already pinned to the key) are excluded, and so are the domains of pods whose own required
//     anti-affinity on the key selects the class; a class whose term selects its own pods is dealt
//     one pod per remaining domain, cheapest first, and the pods beyond the domains are
//     unschedulable with a reason naming the term; any other class goes to the cheapest domain;
//   - affinity: the class is pinned to the domains that hold a bound pod the term selects; a class
//     whose term selects itself, while no bound pod matches, goes to the cheapest domain (the first
//     pod lands anywhere, the rest follow it); a term selecting only pending pods leaves the class
//     unschedulable until those pods run (the kube-scheduler holds it the same way);
//   - a pending class whose domain is not pinned and which another pod's anti-affinity term
//     selects gets the key NotIn the owners' domains.
// Preferred terms on these keys are preferences the packing does not weigh.

// keyTerm is one required pod (anti-)affinity term on a key the packing does not count.
type keyTerm struct {
	key  string
	anti bool
	m    podMatcher
}

func (t keyTerm) String() string {
	kind := "pod affinity"
	if t.anti {
		kind = "pod anti-affinity"
	}
	return fmt.Sprintf("%s (%s, selector %q%s)", kind, t.key, t.m.sel.String(), t.m.describeNS())
}

// keyTermsOf lists the required terms of a pod spec on keys other than zone and hostname.
func (s *solver) keyTermsOf(ns string, podLabels map[string]string, spec *corev1.PodSpec) ([]keyTerm, error) {
	if spec.Affinity == nil {
		return nil, nil
	}
	var out []keyTerm
	add := func(terms []corev1.PodAffinityTerm, anti bool) error {
		for i := range terms {
			if _, counted := topoKind(terms[i].TopologyKey); counted {
				continue
			}
			m, err := s.termMatcher(ns, podLabels, &terms[i])
			if err != nil {
				return err
			}
			out = append(out, keyTerm{key: terms[i].TopologyKey, anti: anti, m: m})
		}
		return nil
	}
	if a := spec.Affinity.PodAffinity; a != nil {
		if err := add(a.RequiredDuringSchedulingIgnoredDuringExecution, false); err != nil {
			return nil, fmt.Errorf("invalid pod affinity: %w", err)
		}
	}
	if a := spec.Affinity.PodAntiAffinity; a != nil {
		if err := add(a.RequiredDuringSchedulingIgnoredDuringExecution, true); err != nil {
			return nil, fmt.Errorf("invalid pod anti-affinity: %w", err)
		}
	}
	return out, nil
}

// keyOwner is a pod (bound, or a dealt pending class) with a required anti-affinity term on a key,
// and the domains of the key it occupies.
type keyOwner struct {
	term    keyTerm
	domains []string
	part    *class // nil for a bound pod
}

// keyDealer holds what dealing the classes to key domains has settled so far.
type keyDealer struct {
	s      *solver
	owners []keyOwner
	bound  map[string][]boundPod // key → bound pods on nodes carrying the key
	// known lists the classes other than the one being dealt: those dealt, the parts of the class
	// being dealt, and those still to deal.
	known func() []*class
	cur   []*class // the parts of the class being dealt
}

type boundPod struct {
	ns     string
	labels labels.Set
	domain string
}

// dealKeyTerms settles every class's required terms on keys the packing does not count (see above).
func (s *solver) dealKeyTerms() {
	kd := &keyDealer{s: s, bound: map[string][]boundPod{}}
	var out []*class
	i := 0
	kd.known = func() []*class {
		return append(append(append([]*class(nil), out...), kd.cur...), s.classes[i+1:]...)
	}
	for _, n := range s.existing {
		for _, p := range n.ex.Pods {
			if p == nil || finished(p) {
				continue
			}
			terms, err := s.keyTermsOf(p.Namespace, p.Labels, &p.Spec)
			if err != nil {
				continue
			}
			for _, t := range terms {
				if d, ok := n.ex.Labels[t.key]; ok && t.anti {
					kd.owners = append(kd.owners, keyOwner{term: t, domains: []string{d}})
				}
			}
		}
	}
	for ; i < len(s.classes); i++ {
		c := s.classes[i]
		terms, err := s.keyTermsOf(c.ns, c.labels, c.spec)
		if c.err != "" || len(terms) == 0 || err != nil {
			if err != nil && c.err == "" {
				c.err = err.Error()
			}
			out = append(out, c)
			continue
		}
		parts := []*class{c}
		for _, key := range termKeys(terms) {
			var next []*class
			for j, part := range parts {
				kd.cur = append(append([]*class(nil), next...), parts[j+1:]...)
				next = append(next, kd.deal(part, key, termsOn(terms, key))...)
			}
			parts = next
		}
		kd.cur = nil
		out = append(out, parts...)
	}
	s.classes = out
	kd.keepOut(out)
}

func termKeys(terms []keyTerm) []string {
	var keys []string
	for _, t := range terms {
		keys = append(keys, t.key)
	}
	return uniqSorted(keys)
}

func termsOn(terms []keyTerm, key string) []keyTerm {
	var out []keyTerm
	for _, t := range terms {
		if t.key == key {
			out = append(out, t)
		}
	}
	return out
}

// pinnedValues is the set of key values every node c may use carries, when c's node requirements
// decide it (ok=false when some alternative leaves the key open).
func pinnedValues(c *class, key string) ([]string, bool) {
	var vals []string
	for _, a := range c.baseAlts {
		r, ok := a.Get(key)
		if !ok {
			return nil, false
		}
		vs, finite := r.Finite()
		if !finite {
			return nil, false
		}
		vals = append(vals, vs...)
	}
	return uniqSorted(vals), len(c.baseAlts) > 0
}

// boundOn lists the bound pods on nodes carrying key, with their domain.
func (kd *keyDealer) boundOn(key string) []boundPod {
	if b, ok := kd.bound[key]; ok {
		return b
	}
	b := []boundPod{}
	for _, n := range kd.s.existing {
		d, ok := n.ex.Labels[key]
		if !ok {
			continue
		}
		for _, p := range n.ex.Pods {
			if p != nil && !finished(p) {
				b = append(b, boundPod{ns: p.Namespace, labels: labels.Set(p.Labels), domain: d})
			}
		}
	}
	kd.bound[key] = b
	return b
}

// anyBoundMatch reports whether some bound pod, on any node, matches m.
func (kd *keyDealer) anyBoundMatch(m *podMatcher) bool {
	for _, n := range kd.s.existing {
		for _, p := range n.ex.Pods {
			if p != nil && !finished(p) && m.matches(p.Namespace, labels.Set(p.Labels)) {
				return true
			}
		}
	}
	return false
}

// deal pins c's pods to domains of key that its terms ts (all on key) allow.
func (kd *keyDealer) deal(c *class, key string, ts []keyTerm) []*class {
	domains, price := kd.s.keyDomains(c, keySpread{key: key, policy: honorTaints})
	sort.SliceStable(domains, func(i, j int) bool {
		if price[domains[i]] != price[domains[j]] {
			return price[domains[i]] < price[domains[j]]
		}
		return domains[i] < domains[j]
	})
	forbidden := map[string]bool{}
	known := kd.known()
	var selfAnti, oneDomain, hasAff bool
	var names []string
	for _, t := range ts {
		names = append(names, t.String())
		self := t.m.matches(c.ns, c.labels)
		if t.anti {
			selfAnti = selfAnti || self
			for _, d := range kd.matchingDomains(&t.m, key, known, c, false) {
				forbidden[d] = true
			}
		}
	}
	for _, o := range kd.owners {
		if o.term.key == key && o.term.m.matches(c.ns, c.labels) {
			for _, d := range o.domains {
				forbidden[d] = true
			}
		}
	}
	var allowed []string
	for _, d := range domains {
		if !forbidden[d] {
			allowed = append(allowed, d)
		}
	}
	for _, t := range ts {
		if t.anti {
			continue
		}
		hasAff = true
		match := kd.matchingDomains(&t.m, key, known, c, true)
		if len(match) == 0 {
			if t.m.matches(c.ns, c.labels) && !kd.anyBoundMatch(&t.m) {
				oneDomain = true
				continue
			}
			return []*class{refuse(c, c.pods, fmt.Sprintf("%s: no pod it selects runs in a domain of %s yet", t, key))}
		}
		allowed = filterValues(allowed, func(d string) bool { return containsSorted(match, d) })
	}
	if len(allowed) == 0 {
		return []*class{refuse(c, c.pods, fmt.Sprintf("%s: no domain of %s is left for it", strings.Join(names, ", "), key))}
	}
	if oneDomain || (!hasAff && !selfAnti) {
		allowed = allowed[:1]
	}
	var parts []*class
	if !selfAnti {
		parts = append(parts, kd.pin(c, c.pods, key, allowed, ts))
		return parts
	}
	n := min(len(allowed), len(c.pods))
	for i := 0; i < n; i++ {
		parts = append(parts, kd.pin(c, c.pods[i:i+1], key, allowed[i:i+1], ts))
	}
	if n < len(c.pods) {
		parts = append(parts, refuse(c, c.pods[n:], fmt.Sprintf("%s: %d domains of %s for %d pods that must not share one", strings.Join(names, ", "), n, key, len(c.pods))))
	}
	return parts
}

// matchingDomains lists the domains of key holding a pod m selects: bound pods, and (unless
// boundOnly) known pending classes other than c pinned to the key. Affinity counts bound pods only:
// a pending class pinned to a domain may still find no node there, which would leave the pod
// following it with nothing to follow.
func (kd *keyDealer) matchingDomains(m *podMatcher, key string, known []*class, c *class, boundOnly bool) []string {
	var out []string
	for _, b := range kd.boundOn(key) {
		if m.matches(b.ns, b.labels) {
			out = append(out, b.domain)
		}
	}
	if boundOnly {
		return uniqSorted(out)
	}
	for _, o := range known {
		if o == c || o.err != "" || !m.matches(o.ns, o.labels) {
			continue
		}
		if vals, ok := pinnedValues(o, key); ok {
			out = append(out, vals...)
		}
	}
	return uniqSorted(out)
}

// pin is the part of c holding pods, with key In domains, and records its anti-affinity terms.
func (kd *keyDealer) pin(c *class, pods []*corev1.Pod, key string, domains []string, ts []keyTerm) *class {
	part := *c
	part.key = c.key + "|" + key + "∈" + strings.Join(domains, ",")
	part.pods = pods
	part.effs = map[int]*eff{}
	part.universeDone = [4]bool{}
	part.baseAlts = make([]requirements.Set, len(c.baseAlts))
	for i, a := range c.baseAlts {
		part.baseAlts[i] = a.With(key, requirements.In(domains...))
	}
	note := fmt.Sprintf("its required pod (anti-)affinity on %s kept it to %s=%s", key, key, strings.Join(domains, ","))
	if part.dealt != "" {
		note = part.dealt + "; " + note
	}
	part.dealt = note
	for _, t := range ts {
		if t.anti {
			kd.owners = append(kd.owners, keyOwner{term: t, domains: domains, part: &part})
		}
	}
	return &part
}

// refuse is the part of c holding pods that no domain can take, with the reason.
func refuse(c *class, pods []*corev1.Pod, reason string) *class {
	part := *c
	part.key = c.key + "|refused"
	part.pods = pods
	part.effs = map[int]*eff{}
	part.err, part.errCause = reason, CauseTopology
	return &part
}

// keepOut gives every class the key NotIn the domains of the pods whose required anti-affinity on
// the key selects it. Dealt classes already avoid them; for a class whose domain is open this is
// what keeps it out, and a class pinned there otherwise (a node selector) is left without a node.
func (kd *keyDealer) keepOut(classes []*class) {
	for _, c := range classes {
		if c.err != "" {
			continue
		}
		byKey := map[string][]string{}
		for _, o := range kd.owners {
			if o.part != c && o.term.m.matches(c.ns, c.labels) {
				byKey[o.term.key] = append(byKey[o.term.key], o.domains...)
			}
		}
		for _, key := range sortedMapKeys(byKey) {
			if vals, ok := pinnedValues(c, key); ok && !intersects(vals, byKey[key]) {
				continue
			}
			out := uniqSorted(byKey[key])
			r, _ := requirements.New(corev1.NodeSelectorOpNotIn, out)
			alts := make([]requirements.Set, len(c.baseAlts)) // a new slice: ownAlts keeps the old one
			for i, a := range c.baseAlts {
				alts[i] = a.With(key, r)
			}
			c.baseAlts = alts
			note := fmt.Sprintf("the required anti-affinity of other pods keeps it out of %s=%s", key, strings.Join(out, ","))
			if c.dealt != "" {
				note = c.dealt + "; " + note
			}
			c.dealt = note
		}
	}
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
