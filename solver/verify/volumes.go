package verify

import corev1 "k8s.io/api/core/v1"

// checkVolumeLimits: a node the plan adds pods to attaches, per CSI driver with a limit, no more
// distinct volumes (claims) than the limit, counting every volume of its bound and placed pods.
func (v *verifier) checkVolumeLimits(n *vnode) {
	if len(n.volLimits) == 0 || len(v.in.VolumeDrivers) == 0 {
		return
	}
	attached := map[string]map[string]bool{}
	grows := map[string]bool{}
	count := func(p *corev1.Pod, placed bool) {
		for _, vol := range p.Spec.Volumes {
			var claim string
			switch {
			case vol.PersistentVolumeClaim != nil:
				claim = p.Namespace + "/" + vol.PersistentVolumeClaim.ClaimName
			case vol.Ephemeral != nil: // the ephemeral volume controller names the claim <pod>-<volume>
				claim = p.Namespace + "/" + p.Name + "-" + vol.Name
			case vol.CSI != nil: // inline: one volume per pod
				claim = p.Namespace + "/" + p.Name + "/" + vol.Name
			default:
				continue
			}
			driver, ok := v.in.VolumeDrivers[claim]
			if !ok {
				continue
			}
			if attached[driver] == nil {
				attached[driver] = map[string]bool{}
			}
			if placed && !attached[driver][claim] {
				grows[driver] = true
			}
			attached[driver][claim] = true
		}
	}
	for _, p := range n.bound {
		count(p, false)
	}
	for _, p := range n.placed {
		count(p, true)
	}
	for driver := range grows {
		if limit, ok := n.volLimits[driver]; ok && len(attached[driver]) > limit {
			v.fail("node %s attaches %d %s volumes, above its limit of %d", n.name, len(attached[driver]), driver, limit)
		}
	}
}
