package solver

import "fmt"

// Volume attach limits: an existing node attaches at most VolumeLimits[driver] volumes of a CSI
// driver. The volumes of a pod are its PodVolumes that Input.VolumeDrivers maps to a driver; each counts
// once per node, however many pods share it. New nodes have no known limit (their CSINode appears
// only after registration), as in Karpenter.

// volumesFit reports whether n can attach the volumes of c's pods besides those it holds, and if not,
// which driver's limit stops it.
func (s *solver) volumesFit(c *class, n *node) (string, bool) {
	if len(n.ex.VolumeLimits) == 0 || len(s.in.VolumeDrivers) == 0 || len(c.pods) == 0 {
		return "", true
	}
	attached := s.nodeVolumes(n)
	extra := map[string]int{}
	for _, claim := range s.claimNames(c.pods[0]) {
		if d, ok := s.in.VolumeDrivers[claim]; ok && !attached[d][claim] {
			extra[d]++
		}
	}
	for d, k := range extra {
		if limit, ok := n.ex.VolumeLimits[d]; ok && len(attached[d])+k > limit {
			return fmt.Sprintf("volume attach limit: node attaches at most %d %s volumes, has %d", limit, d, len(attached[d])), false
		}
	}
	return "", true
}

// attachVolumes records c's volumes as attached to n (pods of one class share their claims).
func (s *solver) attachVolumes(c *class, n *node) {
	if len(n.ex.VolumeLimits) == 0 || len(s.in.VolumeDrivers) == 0 || len(c.pods) == 0 {
		return
	}
	s.nodeVolumes(n)
	s.addVolumes(n, s.claimNames(c.pods[0]))
}

// nodeVolumes returns the volumes attached to existing node n, counting its pods' claims the first
// time it is asked.
func (s *solver) nodeVolumes(n *node) map[string]map[string]bool {
	if n.vols == nil {
		n.vols = map[string]map[string]bool{}
		for _, p := range n.ex.Pods {
			if p != nil && !finished(p) {
				s.addVolumes(n, s.claimNames(p))
			}
		}
	}
	return n.vols
}

func (s *solver) addVolumes(n *node, claims []string) {
	for _, claim := range claims {
		if d, ok := s.in.VolumeDrivers[claim]; ok {
			if n.vols[d] == nil {
				n.vols[d] = map[string]bool{}
			}
			n.vols[d][claim] = true
		}
	}
}
