package solver

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
)

// Topology spread on keys other than zone and hostname (karpenter.sh/capacity-type, a custom
// label such as a rack or a team's failure domain). The packing passes count pods per zone and per
// node only, so such a spread is settled before placement: the pods of the class are dealt to the
// key's domains as the kube-scheduler would admit them one by one (a pod may go to a domain
// holding at most maxSkew − 1 more matching pods than the least loaded domain, or than zero while
// fewer than minDomains domains exist), cheapest domain first, and each share becomes a class of
// its own whose node requirement pins the key to that domain. The domains are the key's values on
// existing nodes and on the nodes the NodePools can launch, restricted by the spread's
// nodeAffinityPolicy and nodeTaintsPolicy as for zones (domains.go). Pods already bound count;
// pending pods count once dealt, so two classes selected by one spread share the balance.

// keySpread is one DoNotSchedule spread on a key the packing does not count.
type keySpread struct {
	key        string
	maxSkew    int32
	minDomains int32
	sel        labels.Selector
	policy     spreadPolicy
}

// hardKeySpreads lists c's DoNotSchedule spreads on keys other than zone and hostname.
func hardKeySpreads(c *class) ([]keySpread, error) {
	var out []keySpread
	for i := range c.spec.TopologySpreadConstraints {
		tsc := &c.spec.TopologySpreadConstraints[i]
		if _, counted := topoKind(tsc.TopologyKey); counted || tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			continue
		}
		sel, err := selectorWithKeys(tsc.LabelSelector, c.labels, tsc.MatchLabelKeys, nil)
		if err != nil {
			return nil, err
		}
		ks := keySpread{key: tsc.TopologyKey, maxSkew: max(tsc.MaxSkew, 1), minDomains: 1, sel: sel, policy: policyOf(tsc)}
		if tsc.MinDomains != nil {
			ks.minDomains = *tsc.MinDomains
		}
		out = append(out, ks)
	}
	return out, nil
}

// splitKeySpreads deals the pods of every class with a key spread to that key's domains (see
// above), replacing the class by one class per domain it uses.
func (s *solver) splitKeySpreads() {
	counts := map[string]map[string]int{} // namespace/key/selector → domain → matching pods
	var out []*class
	for _, c := range s.classes {
		parts := []*class{c}
		if c.err == "" {
			spreads, err := hardKeySpreads(c)
			if err != nil {
				c.err = "invalid topology spread selector: " + err.Error()
			}
			for _, ks := range spreads {
				var next []*class
				for _, part := range parts {
					next = append(next, s.dealKeySpread(part, ks, counts)...)
				}
				parts = next
			}
		}
		out = append(out, parts...)
	}
	s.classes = out
}

// dealKeySpread splits c's pods over the domains of ks.
func (s *solver) dealKeySpread(c *class, ks keySpread, counts map[string]map[string]int) []*class {
	domains, price := s.keyDomains(c, ks)
	if len(domains) == 0 {
		return []*class{c} // no node can carry the key: the Exists requirement reports it
	}
	ck := c.ns + "/" + ks.key + "/" + ks.sel.String()
	cnt := counts[ck]
	if cnt == nil {
		cnt = s.boundKeyCounts(c.ns, ks)
		counts[ck] = cnt
	}
	self := ks.sel.Matches(c.labels)
	// Cheapest domain first, then by name.
	sort.SliceStable(domains, func(i, j int) bool {
		if price[domains[i]] != price[domains[j]] {
			return price[domains[i]] < price[domains[j]]
		}
		return domains[i] < domains[j]
	})
	share := map[string][]*corev1.Pod{}
	for _, p := range c.pods {
		low := math.MaxInt
		for _, d := range domains {
			low = min(low, cnt[d])
		}
		if int32(len(domains)) < ks.minDomains {
			low = 0
		}
		pick := ""
		for _, d := range domains {
			add := 0
			if self {
				add = 1
			}
			if cnt[d]+add-low <= int(ks.maxSkew) {
				pick = d
				break
			}
		}
		if pick == "" { // only when fewer domains than minDomains exist and all are full
			pick = domains[0]
		}
		share[pick] = append(share[pick], p)
		if self {
			cnt[pick]++
		}
	}
	var parts []*class
	for _, d := range domains {
		pods := share[d]
		if len(pods) == 0 {
			continue
		}
		part := *c
		part.key = c.key + "|" + ks.key + "=" + d
		note := fmt.Sprintf("its topology spread on %s (maxSkew=%d) dealt it to %s=%s", ks.key, ks.maxSkew, ks.key, d)
		if part.dealt != "" {
			note = part.dealt + "; " + note
		}
		part.dealt = note
		part.pods = pods
		part.effs = map[int]*eff{}
		part.universeDone = [4]bool{}
		part.baseAlts = make([]requirements.Set, len(c.baseAlts))
		for i, a := range c.baseAlts {
			part.baseAlts[i] = a.With(ks.key, requirements.In(d))
		}
		parts = append(parts, &part)
	}
	return parts
}

// boundKeyCounts counts, per value of the key, the bound pods of existing nodes the spread's
// selector matches (in the spread's namespace).
func (s *solver) boundKeyCounts(ns string, ks keySpread) map[string]int {
	cnt := map[string]int{}
	for _, n := range s.existing {
		d, ok := n.ex.Labels[ks.key]
		if !ok {
			continue
		}
		for _, p := range n.ex.Pods {
			if p != nil && !finished(p) && p.Namespace == ns && ks.sel.Matches(labels.Set(p.Labels)) {
				cnt[d]++
			}
		}
	}
	return cnt
}

// keyDomains lists the values of ks.key that count as domains for class c, with the cheapest
// offering a new node of each would cost (+Inf for values only existing nodes carry).
func (s *solver) keyDomains(c *class, ks keySpread) ([]string, map[string]float64) {
	price := map[string]float64{}
	add := func(d string, pr float64) {
		if old, ok := price[d]; !ok || pr < old {
			price[d] = pr
		}
	}
	anyAlt := []requirements.Set{nil}
	for _, n := range s.existing {
		d, ok := n.ex.Labels[ks.key]
		if !ok {
			continue
		}
		if ks.policy&honorTaints != 0 {
			if _, bad := untolerated(c.tols, n.taints); bad {
				continue
			}
		}
		alts := c.baseAlts
		if ks.policy&ignoreAffinity != 0 {
			alts = anyAlt
		}
		for _, a := range alts {
			if a.MatchesLabels(n.ex.Labels, n.name) {
				add(d, math.Inf(1))
				break
			}
		}
	}
	for _, p := range s.pools {
		if ks.policy&honorTaints != 0 {
			if _, bad := untolerated(c.tols, p.taints); bad {
				continue
			}
		}
		alts := c.baseAlts
		if ks.policy&ignoreAffinity != 0 {
			alts = anyAlt
		}
		for _, a := range alts {
			if x := p.reqs.And(a); x.Conflict() != "" {
				continue
			}
			for _, t := range p.types {
				for _, d := range s.keyValues(p, t, ks.key) {
					rs := a.With(ks.key, requirements.In(d))
					if !typeAdmits(p, t, rs, s.zones, s.cts) {
						continue
					}
					pr := t.minPrice
					if ci, ok := s.ctIdx[d]; ok && ks.key == v1.CapacityTypeLabelKey {
						pr, _ = t.price(^uint64(0), 1<<uint(ci))
					}
					add(d, pr)
				}
			}
		}
	}
	out := make([]string, 0, len(price))
	for d := range price {
		out = append(out, d)
	}
	sort.Strings(out)
	return out, price
}

// keyValues lists the values a node of type t in pool p may carry for key.
func (s *solver) keyValues(p *pool, t *itype, key string) []string {
	if key == v1.CapacityTypeLabelKey {
		var out []string
		seen := map[int]bool{}
		for _, o := range t.offers {
			if !seen[o.ct] {
				seen[o.ct] = true
				out = append(out, s.cts[o.ct])
			}
		}
		return out
	}
	val, present, resolved := p.labelOf(t, key)
	if resolved {
		if present {
			return []string{val}
		}
		return nil
	}
	r, _ := p.reqs.Get(key)
	vals, _ := r.Finite()
	return vals
}
