package policy

import (
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

// capacityTypes is the capacity-type requirement of a pool; pools that say nothing launch on-demand,
// as in Karpenter.
func capacityTypes(s requirements.Set) requirements.Requirement {
	if r, ok := s.Get(v1.CapacityTypeLabelKey); ok {
		return r
	}
	return requirements.In(v1.CapacityTypeOnDemand)
}

// offerings returns the offerings of it that a node of a pool with requirements s could be bought
// through; none means the pool cannot launch the instance type.
func offerings(s requirements.Set, it *catalog.InstanceType, known requirements.KnownKeys) []catalog.Offering {
	if _, ok := s.Get(v1.CapacityTypeLabelKey); !ok {
		s = s.With(v1.CapacityTypeLabelKey, capacityTypes(s))
	}
	return s.Offerings(it, known)
}

// hasSpot reports whether the pool may launch spot capacity.
func hasSpot(s requirements.Set) bool {
	r := capacityTypes(s)
	return r.Has(v1.CapacityTypeSpot)
}
