package policy

import (
	"slices"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/requirements"
)

// nodePoolSet is what every node of np satisfies through its template (karpenter.sh/nodepool aside,
// so two pools' sets can be compared). A requirement that does not parse admits nothing (the API
// server's validation rejects it before it reaches a guardrail).
func nodePoolSet(np *v1.NodePool) requirements.Set {
	var s requirements.Set
	for k, v := range np.Spec.Template.Labels {
		s = s.With(k, requirements.In(v))
	}
	for _, r := range np.Spec.Template.Spec.Requirements {
		rq, err := requirements.New(r.Operator, r.Values)
		if err != nil {
			rq = requirements.Requirement{}
		}
		s = s.With(r.Key, rq)
	}
	return s
}

// offerings returns the offerings of it that a node of a pool with requirements s could be bought
// through; none means the pool cannot launch the instance type. A pool without a capacity-type
// requirement launches any capacity type, spot included, as the solver does (and Karpenter v1).
func offerings(s requirements.Set, it *catalog.InstanceType, known requirements.KnownKeys) []catalog.Offering {
	return s.Offerings(it, known)
}

// offersSpot reports whether the pool can launch some type of the catalog as spot.
func offersSpot(s requirements.Set, types []*catalog.InstanceType) bool {
	known := requirements.Known(types)
	for _, it := range types {
		if slices.ContainsFunc(offerings(s, it, known), func(o catalog.Offering) bool { return o.CapacityType == v1.CapacityTypeSpot }) {
			return true
		}
	}
	return false
}

// hasSpot reports whether the pool may launch spot capacity: it requires nothing of the capacity
// type, or admits spot.
func hasSpot(s requirements.Set) bool {
	r, ok := s.Get(v1.CapacityTypeLabelKey)
	return !ok || r.Has(v1.CapacityTypeSpot)
}
