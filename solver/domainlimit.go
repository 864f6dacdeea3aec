package solver

import (
	"fmt"

	v1 "github.com/joist-dev/joist/api/v1"
)

// maxDomains is how many zones, and how many capacity types, the solver's bitmasks tell apart.
// Only the zones and capacity types some NodePool admits, and the zones of existing nodes,
// count towards it (setup); offerings beyond it are not used and the place pass says so.
const maxDomains = 64

// refuseBeyondDomains refuses, when the input names more zones (or capacity types) than the masks
// hold, every class whose placement depends on them: counting only 64 zones, a zone spread or
// zone (anti-)affinity could be broken by the pods in the zones left out, and node selection or
// volumes naming a zone may name one left out. Each such pod is reported unschedulable with
// CauseDomainLimit and a reason naming the limit and the fix; pods that may land in any zone are
// placed (in the zones the masks hold).
func (s *solver) refuseBeyondDomains() {
	if len(s.droppedZones) == 0 && len(s.droppedCTs) == 0 {
		return
	}
	for _, c := range s.classes {
		if c.err != "" {
			continue
		}
		if what := s.zoneDependence(c); what != "" && len(s.droppedZones) > 0 {
			c.err = fmt.Sprintf("the NodePools and nodes span %d zones and the solver tells apart at most %d (%s and %d more left out); this pod's %s depends on its zone: narrow the NodePools' %s requirement to at most %d zones",
				len(s.zones)+len(s.droppedZones), maxDomains, s.droppedZones[0], len(s.droppedZones)-1, what, v1.LabelTopologyZone, maxDomains)
			c.errCause = CauseDomainLimit
			continue
		}
		if len(s.droppedCTs) > 0 && s.selectsKey(c, v1.CapacityTypeLabelKey) {
			c.err = fmt.Sprintf("the NodePools span %d capacity types and the solver tells apart at most %d (%s and %d more left out); this pod's node selection names %s: narrow the NodePools' %s requirement to at most %d values",
				len(s.cts)+len(s.droppedCTs), maxDomains, s.droppedCTs[0], len(s.droppedCTs)-1, v1.CapacityTypeLabelKey, v1.CapacityTypeLabelKey, maxDomains)
			c.errCause = CauseDomainLimit
		}
	}
}

// zoneDependence names what makes class c's placement depend on its zone ("" when nothing does).
func (s *solver) zoneDependence(c *class) string {
	switch {
	case s.selectsKey(c, v1.LabelTopologyZone):
		return "node selection on " + v1.LabelTopologyZone
	case len(c.volZones) > 0:
		return "volume, bound in a zone,"
	case c.zoneRelevant:
		return "membership in a zone spread or zone (anti-)affinity of other pods"
	}
	for _, sp := range append(append([]*spreadRef(nil), c.hardSpread...), c.softSpread...) {
		if !sp.g.hostname {
			return "zone topology spread"
		}
	}
	for _, t := range append(append(append(append([]*termRef(nil), c.hardAff...), c.softAff...), c.hardAnti...), c.softAnti...) {
		if !t.g.hostname {
			return "zone pod (anti-)affinity"
		}
	}
	return ""
}

// selectsKey reports whether any of c's node selection alternatives constrains key.
func (s *solver) selectsKey(c *class, key string) bool {
	for _, a := range c.baseAlts {
		if _, ok := a.Get(key); ok {
			return true
		}
	}
	return false
}
