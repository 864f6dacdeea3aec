package solver

import (
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
)

// maxOptions caps the instance-type options of a plan (as upstream Karpenter does), keeping the
// cheapest; more only when minValues needs them.
const maxOptions = 60

func sortPods(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

// result assembles the plan from the solver state.
func (s *solver) result() Result {
	var r Result
	for _, n := range s.existing {
		if len(n.pods) == 0 {
			continue
		}
		pods := append([]*corev1.Pod(nil), n.pods...)
		sortPods(pods)
		r.ExistingPlacements = append(r.ExistingPlacements, ExistingPlacement{Node: n.name, Pods: pods})
	}
	for _, n := range s.open {
		if len(n.pods) == 0 {
			continue
		}
		plan := s.plan(n)
		r.CostPerHour += plan.Offering.Price
		r.NewNodeClaims = append(r.NewNodeClaims, plan)
	}
	r.Unschedulable = s.unsched
	sort.SliceStable(r.Unschedulable, func(i, j int) bool {
		a, b := r.Unschedulable[i].Pod, r.Unschedulable[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	r.LowerBoundPerHour = s.bound()
	return r
}

func (s *solver) plan(n *node) NodeClaimPlan {
	p := n.pool
	type opt struct {
		t     *itype
		price float64
	}
	var opts []opt
	// Types come in minPrice order and a masked price is never below minPrice: once maxOptions are
	// kept, a type whose minPrice exceeds the dearest kept price cannot make the cut.
	dearest := 0.0
	n.options.each(func(i int) bool {
		t := p.types[i]
		if len(p.minValues) == 0 && len(opts) >= maxOptions && t.minPrice > dearest {
			return false
		}
		if pr, _ := t.price(n.zoneMask, n.ctMask); pr >= 0 && lessEq(n.used, t.alloc) {
			opts = append(opts, opt{t, pr})
			dearest = math.Max(dearest, pr)
		}
		return true
	})
	sort.SliceStable(opts, func(i, j int) bool {
		if opts[i].price != opts[j].price {
			return opts[i].price < opts[j].price
		}
		return opts[i].t.it.Name < opts[j].t.it.Name
	})
	if len(opts) > maxOptions {
		keep := opts[:maxOptions]
		var bits bitset = newBitset(len(p.types))
		for _, o := range keep {
			bits.set(o.t.idx)
		}
		if s.minValuesMsg(p, bits, n.reqs, n.zoneMask, n.ctMask) == "" {
			opts = keep
		}
	}
	chosen := opts[0].t
	_, oi := chosen.price(n.zoneMask, n.ctMask)
	plan := NodeClaimPlan{NodePool: p.name, InstanceType: chosen.it, Offering: chosen.offers[oi].o}
	var names []string
	var zones, cts uint64
	for _, o := range opts {
		plan.InstanceTypeOptions = append(plan.InstanceTypeOptions, o.t.it)
		names = append(names, o.t.it.Name)
		for _, of := range o.t.offers {
			if n.zoneMask&(1<<uint(of.zone)) != 0 && n.ctMask&(1<<uint(of.ct)) != 0 {
				zones |= 1 << uint(of.zone)
				cts |= 1 << uint(of.ct)
			}
		}
	}
	minValues := map[string]*int{}
	for _, r := range p.np.Spec.Template.Spec.Requirements {
		if r.MinValues != nil {
			minValues[r.Key] = r.MinValues
		}
	}
	maskValues := func(m uint64, universe []string) []string {
		var out []string
		for u := m; u != 0; u &= u - 1 {
			out = append(out, universe[bits.TrailingZeros64(u)])
		}
		return uniqSorted(out)
	}
	var reqs []v1.NodeSelectorRequirementWithMinValues
	add := func(key string, values []string) {
		reqs = append(reqs, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values, MinValues: minValues[key]})
	}
	add(v1.NodePoolLabelKey, []string{p.name})
	add(v1.LabelInstanceType, uniqSorted(names))
	add(v1.LabelTopologyZone, maskValues(zones, s.zones))
	add(v1.CapacityTypeLabelKey, maskValues(cts, s.cts))
	for _, kr := range n.reqs {
		switch kr.Key {
		case v1.NodePoolLabelKey, v1.LabelInstanceType, v1.LabelTopologyZone, v1.CapacityTypeLabelKey, requirements.MetadataNameKey, v1.LabelHostname:
			continue
		}
		r := kr.Requirement
		if r.Unconstrained() {
			continue
		}
		// A key only the pool's requirements define becomes a node label: settle it on one value.
		_, templ := p.templLabels[kr.Key]
		if vals, finite := r.Finite(); !templ && !p.typeKeys[kr.Key] && finite && len(vals) > 1 {
			r = requirements.In(vals[0])
		}
		reqs = append(reqs, r.ToAPI(kr.Key, minValues[kr.Key])...)
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Key < reqs[j].Key })
	plan.Requirements = reqs
	plan.Pods = append([]*corev1.Pod(nil), n.pods...)
	sortPods(plan.Pods)
	req := n.used.clone()
	req.add(chosen.ds)
	plan.Requests = s.d.list(req)
	return plan
}
