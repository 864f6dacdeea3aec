package solver

import (
	"math/bits"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
)

// spreadPolicy says which nodes count as domains of a spread: bit ignoreAffinity set for
// nodeAffinityPolicy: Ignore (default Honor: only nodes the pod's node selection admits), bit
// honorTaints for nodeTaintsPolicy: Honor (default Ignore: tainted nodes count too).
type spreadPolicy uint8

const (
	ignoreAffinity spreadPolicy = 1 << iota
	honorTaints
)

func policyOf(tsc *corev1.TopologySpreadConstraint) spreadPolicy {
	var p spreadPolicy
	if tsc.NodeAffinityPolicy != nil && *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore {
		p |= ignoreAffinity
	}
	if tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		p |= honorTaints
	}
	return p
}

// zoneUniverse is the set of zones that count as domains of a zone spread of class c under policy
// pol (the pod's own node selection, c.ownAlts, not the pins the key deals add): zones of existing nodes and zones offered by pool instance types, restricted (by default) to
// those the pod's required node selection admits, and (with nodeTaintsPolicy: Honor) to nodes and
// pools whose taints the pod tolerates.
func (s *solver) zoneUniverse(c *class, pol spreadPolicy) uint64 {
	if c.universeDone[pol] {
		return c.universe[pol]
	}
	var m uint64
	for _, n := range s.existing {
		if n.zone < 0 {
			continue
		}
		if pol&honorTaints != 0 {
			if _, bad := untolerated(c.tols, n.taints); bad {
				continue
			}
		}
		if pol&ignoreAffinity != 0 {
			m |= 1 << uint(n.zone)
			continue
		}
		for _, a := range c.ownAlts {
			if a.MatchesLabels(n.ex.Labels, n.name) {
				m |= 1 << uint(n.zone)
				break
			}
		}
	}
	for _, p := range s.pools {
		if pol&honorTaints != 0 {
			if _, bad := untolerated(c.tols, p.taints); bad {
				continue
			}
		}
		if pol&ignoreAffinity != 0 {
			for _, t := range p.types {
				m |= t.zones
			}
			continue
		}
		for _, a := range c.ownAlts {
			if x := p.reqs.And(a); x.Conflict() != "" {
				continue
			}
			for _, t := range p.types {
				if t.zones&^m == 0 {
					continue
				}
				for i := range t.offers {
					z := t.offers[i].zone
					if m&(1<<uint(z)) != 0 {
						continue
					}
					if typeAdmits(p, t, a.With(v1.LabelTopologyZone, requirements.In(s.zones[z])), s.zones, s.cts) {
						m |= 1 << uint(z)
					}
				}
			}
		}
	}
	c.universe[pol], c.universeDone[pol] = m, true
	return m
}

func minZoneCount(g *group, universe uint64) int32 {
	var min int32 = -1
	for u := universe; u != 0; u &= u - 1 {
		z := bits.TrailingZeros64(u)
		if c := g.zoneCnt[z]; min < 0 || c < min {
			min = c
		}
	}
	if min < 0 {
		return 0
	}
	return min
}
