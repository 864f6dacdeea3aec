package verify

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	v1 "github.com/joist-dev/joist/api/v1"
)

// where a pod ends up in the final cluster.
type podAt struct {
	pod    *corev1.Pod
	node   *vnode
	placed bool
}

// matcher selects pods by namespace and labels.
type matcher struct {
	key   string
	allNS bool
	ns    map[string]bool
	nsSel labels.Selector // nil: the term has no namespaceSelector
	nsl   map[string]map[string]string
	sel   labels.Selector
}

func (m *matcher) matches(p *corev1.Pod) bool {
	if !m.allNS && !m.ns[p.Namespace] && (m.nsSel == nil || !m.nsSel.Matches(namespaceLabels(m.nsl, p.Namespace))) {
		return false
	}
	return m.sel.Matches(labels.Set(p.Labels))
}

// namespaceLabels are a namespace's labels from the input, with the kubernetes.io/metadata.name
// label the API server sets on every namespace.
func namespaceLabels(nsl map[string]map[string]string, ns string) labels.Set {
	out := labels.Set{}
	for k, v := range nsl[ns] {
		out[k] = v
	}
	out[corev1.LabelMetadataName] = ns
	return out
}

func (v *verifier) newMatcher(ls *metav1.LabelSelector, owner *corev1.Pod, match, mismatch, namespaces []string, nsSelector *metav1.LabelSelector) (*matcher, error) {
	m := &matcher{ns: map[string]bool{}, nsl: v.in.Namespaces}
	if ls == nil {
		m.sel = labels.Nothing()
	} else {
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, err
		}
		for _, keys := range []struct {
			k  []string
			op selection.Operator
		}{{match, selection.In}, {mismatch, selection.NotIn}} {
			for _, k := range keys.k {
				if val, ok := owner.Labels[k]; ok {
					r, err := labels.NewRequirement(k, keys.op, []string{val})
					if err != nil {
						return nil, err
					}
					sel = sel.Add(*r)
				}
			}
		}
		m.sel = sel
	}
	nsSel := "-"
	if nsSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(nsSelector)
		if err != nil {
			return nil, err
		}
		if sel.Empty() {
			m.allNS = true
		} else {
			m.nsSel, nsSel = sel, sel.String()
		}
	}
	if len(namespaces) == 0 && nsSelector == nil {
		namespaces = []string{owner.Namespace}
	}
	for _, n := range namespaces {
		m.ns[n] = true
	}
	m.key = fmt.Sprintf("%t|%v|%s|%s", m.allNS, namespaces, nsSel, m.sel.String())
	return m, nil
}

// keyDomain is a node's domain for a spread's topology key; ok=false when the node has none.
func keyDomain(n *vnode, key string) (string, bool) {
	switch key {
	case v1.LabelHostname:
		return n.name, true
	case v1.LabelTopologyZone:
		return n.zone, n.hasZone
	}
	d, ok := n.node.Labels[key]
	return d, ok
}

type tally struct {
	byDomain       map[string]int // all matching pods
	placedByDomain map[string]int
	total          int
	boundTotal     int
}

func (v *verifier) checkTopology() {
	var all []podAt
	for _, n := range v.nodes {
		for _, p := range n.bound {
			all = append(all, podAt{p, n, false})
		}
		for _, p := range n.placed {
			all = append(all, podAt{p, n, true})
		}
	}
	tallies := map[string]*tally{}
	count := func(m *matcher, topoKey string) *tally {
		key := topoKey + "|" + m.key
		if t, ok := tallies[key]; ok {
			return t
		}
		t := &tally{byDomain: map[string]int{}, placedByDomain: map[string]int{}}
		for _, pa := range all {
			if !m.matches(pa.pod) {
				continue
			}
			t.total++
			if !pa.placed {
				t.boundTotal++
			}
			d, ok := keyDomain(pa.node, topoKey)
			if !ok {
				continue
			}
			t.byDomain[d]++
			if pa.placed {
				t.placedByDomain[d]++
			}
		}
		tallies[key] = t
		return t
	}
	carriers := v.spreadCarriers(all)
	// buckets lists the pods of one domain of a topology key, grouped on first use of the key.
	byKey := map[string]map[string][]podAt{}
	buckets := func(key, d string) []podAt {
		b, ok := byKey[key]
		if !ok {
			b = map[string][]podAt{}
			for _, pa := range all {
				if dom, ok := keyDomain(pa.node, key); ok {
					b[dom] = append(b[dom], pa)
				}
			}
			byKey[key] = b
		}
		return b[d]
	}
	for _, pa := range all {
		if pa.placed {
			v.checkSpreadKeys(pa)
			v.checkSpread(pa, all, count, carriers)
			v.checkAffinity(pa, count)
		}
		v.checkAnti(pa, buckets)
	}
}

func hostnameKey(key string) (hostname, ok bool) {
	switch key {
	case v1.LabelHostname:
		return true, true
	case v1.LabelTopologyZone:
		return false, true
	}
	return false, false
}

// spreadIdentity names a DoNotSchedule constraint as its pod applies it.
func spreadIdentity(p *corev1.Pod, c *corev1.TopologySpreadConstraint, m *matcher) string {
	aff, _ := json.Marshal(struct {
		S map[string]string
		A any
	}{p.Spec.NodeSelector, requiredAffinity(p)})
	md := int32(1)
	if c.MinDomains != nil {
		md = *c.MinDomains
	}
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s", p.Namespace, c.TopologyKey, c.MaxSkew, md, m.key, aff)
}

func requiredAffinity(p *corev1.Pod) any {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	return p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// checkSpreadKeys: the kube-scheduler places a pod with a DoNotSchedule spread only on nodes that
// carry the constraint's topology key.
func (v *verifier) checkSpreadKeys(pa podAt) {
	for _, c := range pa.pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			continue
		}
		if _, ok := pa.node.node.Labels[c.TopologyKey]; !ok && c.TopologyKey != v1.LabelHostname {
			v.fail("pod %s on %s: the node has no label %s, the topology key of its DoNotSchedule spread", podKey(pa.pod), pa.node.name, c.TopologyKey)
		}
	}
}

// hardSpreads are a pod's DoNotSchedule constraints, on any topology key.
func hardSpreads(p *corev1.Pod) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			out = append(out, c)
		}
	}
	return out
}

// spreadCarriers counts, per constraint identity and domain, the placed pods that carry it.
func (v *verifier) spreadCarriers(all []podAt) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, pa := range all {
		if !pa.placed {
			continue
		}
		seen := map[string]bool{}
		for i, c := range hardSpreads(pa.pod) {
			m, err := v.newMatcher(c.LabelSelector, pa.pod, c.MatchLabelKeys, nil, nil, nil)
			if err != nil {
				continue
			}
			d, ok := keyDomain(pa.node, c.TopologyKey)
			if !ok || !m.matches(pa.pod) {
				continue
			}
			id := spreadIdentity(pa.pod, &hardSpreads(pa.pod)[i], m)
			if seen[id] {
				continue
			}
			seen[id] = true
			if out[id] == nil {
				out[id] = map[string]int{}
			}
			out[id][d]++
		}
	}
	return out
}

// checkSpread: for every DoNotSchedule constraint of a placed pod, the pod's domain holds at most
// maxSkew more matching pods than the least loaded eligible domain, not counting placed pods that
// do not carry the same constraint (they may have landed after it, which Kubernetes allows).
func (v *verifier) checkSpread(pa podAt, all []podAt, count func(*matcher, string) *tally, carriers map[string]map[string]int) {
	for _, c := range hardSpreads(pa.pod) {
		hostname, zoneOrHost := hostnameKey(c.TopologyKey)
		m, err := v.newMatcher(c.LabelSelector, pa.pod, c.MatchLabelKeys, nil, nil, nil)
		if err != nil {
			v.fail("pod %s: bad spread selector: %v", podKey(pa.pod), err)
			continue
		}
		d, ok := keyDomain(pa.node, c.TopologyKey)
		if !ok {
			v.fail("pod %s spreads over %s but node %s has no such label", podKey(pa.pod), c.TopologyKey, pa.node.name)
			continue
		}
		t := count(m, c.TopologyKey)
		incl := inclusion(pa.pod, &c)
		var universe []string
		if hostname {
			for _, n := range v.nodes {
				if incl(n.node, n.taints) {
					universe = append(universe, n.name)
				}
			}
		} else if zoneOrHost {
			for z := range v.zoneUniverse(incl) {
				universe = append(universe, z)
			}
		} else {
			for d := range v.keyUniverse(incl, c.TopologyKey) {
				universe = append(universe, d)
			}
		}
		min := -1
		for _, dom := range universe {
			if x := t.byDomain[dom]; min < 0 || x < min {
				min = x
			}
		}
		md := int32(1)
		if c.MinDomains != nil {
			md = *c.MinDomains
		}
		if min < 0 || int32(len(universe)) < md {
			min = 0
		}
		id := spreadIdentity(pa.pod, &c, m)
		unconstrained := t.placedByDomain[d] - carriers[id][d]
		if got := t.byDomain[d] - unconstrained - min; got > int(c.MaxSkew) {
			v.fail("pod %s: topology spread on %s violated in %s: %d matching pods (%d from pods without the constraint) vs minimum %d, maxSkew %d",
				podKey(pa.pod), c.TopologyKey, d, t.byDomain[d], unconstrained, min, c.MaxSkew)
		}
	}
}

func affinityTerms(p *corev1.Pod, anti bool) []corev1.PodAffinityTerm {
	a := p.Spec.Affinity
	if a == nil {
		return nil
	}
	if anti {
		if a.PodAntiAffinity == nil {
			return nil
		}
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if a.PodAffinity == nil {
		return nil
	}
	return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// checkAffinity: a placed pod with required pod affinity, on any topology key, shares its domain (the
// node's value of the key) with another matching pod, unless it matches its own term and no pod
// matched before the plan. A term's namespaceSelector selects by the input's namespace labels.
func (v *verifier) checkAffinity(pa podAt, count func(*matcher, string) *tally) {
	for _, term := range affinityTerms(pa.pod, false) {
		m, err := v.newMatcher(term.LabelSelector, pa.pod, term.MatchLabelKeys, term.MismatchLabelKeys, term.Namespaces, term.NamespaceSelector)
		if err != nil {
			v.fail("pod %s: bad affinity selector: %v", podKey(pa.pod), err)
			continue
		}
		t := count(m, term.TopologyKey)
		self := m.matches(pa.pod)
		d, hasDomain := keyDomain(pa.node, term.TopologyKey)
		others := 0
		if hasDomain {
			others = t.byDomain[d]
			if self {
				others--
			}
		}
		if others > 0 || (self && t.boundTotal == 0) {
			continue
		}
		v.fail("pod %s on %s: required pod affinity (%s, %s) has no matching pod in its domain", podKey(pa.pod), pa.node.name, term.TopologyKey, m.sel.String())
	}
}

// checkAnti: no pod shares a domain with a pod matching its required anti-affinity term, where at
// least one of the two was placed by the plan.
func (v *verifier) checkAnti(pa podAt, buckets func(key, domain string) []podAt) {
	for _, term := range affinityTerms(pa.pod, true) {
		m, err := v.newMatcher(term.LabelSelector, pa.pod, term.MatchLabelKeys, term.MismatchLabelKeys, term.Namespaces, term.NamespaceSelector)
		if err != nil {
			continue
		}
		d, hasDomain := keyDomain(pa.node, term.TopologyKey)
		if !hasDomain {
			continue
		}
		for _, other := range buckets(term.TopologyKey, d) {
			if other.pod == pa.pod || (!pa.placed && !other.placed) {
				continue
			}
			if m.matches(other.pod) {
				v.fail("pod %s on %s: required anti-affinity (%s, %s) violated by %s", podKey(pa.pod), pa.node.name, term.TopologyKey, m.sel.String(), podKey(other.pod))
				break
			}
		}
	}
}
