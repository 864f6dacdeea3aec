package verify

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Which values of a topology key count as domains of a spread.

// inclusion is the kube-scheduler's rule for which nodes count as domains of a spread: by default
// those the pod's required node affinity matches (nodeAffinityPolicy) whatever their taints
// (nodeTaintsPolicy).
func inclusion(p *corev1.Pod, c *corev1.TopologySpreadConstraint) func(*corev1.Node, []corev1.Taint) bool {
	na := nodeaffinity.GetRequiredNodeAffinity(p)
	honorAffinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	return func(n *corev1.Node, taints []corev1.Taint) bool {
		if honorAffinity {
			if ok, _ := na.Match(n); !ok {
				return false
			}
		}
		if honorTaints {
			if _, ok := tolerated(&p.Spec, taints); !ok {
				return false
			}
		}
		return true
	}
}

// zoneUniverse lists the zones that count for a zone spread: zones of nodes the inclusion rule
// admits and zones of pool offerings whose launched node it would admit.
func (v *verifier) zoneUniverse(incl func(*corev1.Node, []corev1.Taint) bool) map[string]bool {
	zones := map[string]bool{}
	for _, n := range v.nodes {
		if n.hasZone && incl(n.node, n.taints) {
			zones[n.zone] = true
		}
	}
	for _, pi := range v.in.NodePools {
		if pi.NodePool == nil {
			continue
		}
		for _, it := range pi.InstanceTypes {
			if it == nil {
				continue
			}
			for _, o := range it.Offerings {
				if !o.Available || zones[o.Zone] {
					continue
				}
				l := v.plannedLabels(pi.NodePool, it, o, pi.NodePool.Spec.Template.Spec.Requirements, "")
				if ok, _ := allMatch(pi.NodePool.Spec.Template.Spec.Requirements, l); !ok {
					continue
				}
				if incl(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}}, poolTaints(pi.NodePool)) {
					zones[o.Zone] = true
				}
			}
		}
	}
	return zones
}

// keyUniverse lists the values of a topology key other than zone and hostname that count as
// domains: values on nodes the inclusion rule admits, and values a pool's launched node would
// carry (the offering's capacity type, the instance type's or template's label, or each value of
// the pool's In requirement on the key) where the inclusion rule admits that node.
func (v *verifier) keyUniverse(incl func(*corev1.Node, []corev1.Taint) bool, key string) map[string]bool {
	out := map[string]bool{}
	for _, n := range v.nodes {
		if d, ok := n.node.Labels[key]; ok && incl(n.node, n.taints) {
			out[d] = true
		}
	}
	for _, pi := range v.in.NodePools {
		if pi.NodePool == nil {
			continue
		}
		reqs := pi.NodePool.Spec.Template.Spec.Requirements
		for _, it := range pi.InstanceTypes {
			if it == nil {
				continue
			}
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				l := v.plannedLabels(pi.NodePool, it, o, reqs, "")
				var vals []string
				if d, ok := l[key]; ok {
					vals = []string{d}
				} else {
					for _, r := range reqs {
						if r.Key == key && r.Operator == corev1.NodeSelectorOpIn {
							vals = append(vals, r.Values...)
						}
					}
				}
				for _, d := range vals {
					if out[d] {
						continue
					}
					withKey := map[string]string{}
					for k, x := range l {
						withKey[k] = x
					}
					withKey[key] = d
					if ok, _ := allMatch(reqs, withKey); !ok {
						continue
					}
					if incl(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: withKey}}, poolTaints(pi.NodePool)) {
						out[d] = true
					}
				}
			}
		}
	}
	return out
}
