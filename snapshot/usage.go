package snapshot

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/quantity"
	"github.com/joist-dev/joist/requirements"
	"github.com/joist-dev/joist/solver"
)

// ClaimCapacity is what a NodeClaim counts against limits: its launched capacity, or before launch
// the requests it was sized for.
func ClaimCapacity(nc *v1.NodeClaim) corev1.ResourceList {
	if len(nc.Status.Capacity) > 0 {
		return nc.Status.Capacity
	}
	return nc.Spec.Resources.Requests
}

func nodeCapacity(n *corev1.Node) corev1.ResourceList {
	if len(n.Status.Capacity) > 0 {
		return n.Status.Capacity
	}
	return n.Status.Allocatable
}

func addList(dst corev1.ResourceList, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

// usage fills Usage and Headroom. A pool's usage counts all its NodeClaims (a claim being deleted
// still runs until its instance is gone) and its nodes without a NodeClaim (a dump without claims);
// the cluster limits count the NodeClaims not being deleted and those nodes.
func (s *Snapshot) usage(claims []*v1.NodeClaim, nodes []*corev1.Node, claimOfNode map[string]*v1.NodeClaim, guardrails []policyv1alpha1.Guardrail) {
	s.Usage = map[string]corev1.ResourceList{}
	pool := func(name string) corev1.ResourceList {
		if s.Usage[name] == nil {
			s.Usage[name] = corev1.ResourceList{}
		}
		return s.Usage[name]
	}
	inUse := corev1.ResourceList{}
	var count int64
	for _, nc := range claims {
		if nc == nil {
			continue
		}
		addList(pool(nc.Labels[v1.NodePoolLabelKey]), ClaimCapacity(nc))
		if nc.DeletionTimestamp.IsZero() {
			count++
			addList(inUse, ClaimCapacity(nc))
		}
	}
	for _, n := range nodes {
		name, ok := n.Labels[v1.NodePoolLabelKey]
		if !ok || claimOfNode[n.Name] != nil {
			continue
		}
		addList(pool(name), nodeCapacity(n))
		count++
		addList(inUse, nodeCapacity(n))
	}
	s.Headroom = policy.ClusterLimitHeadroom(guardrails, inUse, count)
}

// remaining is the pool's limits less its usage, further capped by the cluster-wide headroom; nil
// means unlimited.
func remaining(np *v1.NodePool, used, cluster corev1.ResourceList) corev1.ResourceList {
	if len(np.Spec.Limits) == 0 && len(cluster) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for name, limit := range np.Spec.Limits {
		if quantity.Check(limit) != "" {
			continue // no bound on name: beyond any cluster, and exact arithmetic on it costs seconds
		}
		left := limit.DeepCopy()
		left.Sub(used[name])
		out[name] = left
	}
	for name, q := range cluster {
		if cur, ok := out[name]; !ok || q.Cmp(cur) < 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// Blocked is a planned node the cluster-wide limits do not allow.
type Blocked struct {
	Plan   solver.NodeClaimPlan
	Reason string
}

// Admit keeps plans, in the solver's order, while they fit the Guardrails' cluster-wide headroom; a
// batch shares one budget. The snapshot's Headroom is not changed.
func (s *Snapshot) Admit(plans []solver.NodeClaimPlan) (admitted []solver.NodeClaimPlan, blocked []Blocked) {
	h := s.Headroom
	if !h.Limited() {
		return plans, nil
	}
	h.Remaining = h.Remaining.DeepCopy()
	if h.NodesRemaining != nil {
		n := *h.NodesRemaining
		h.NodesRemaining = &n
	}
	for _, plan := range plans {
		if ok, reason := h.Fits(plan.InstanceType.Capacity); !ok {
			blocked = append(blocked, Blocked{Plan: plan, Reason: reason})
			continue
		}
		h.Subtract(plan.InstanceType.Capacity)
		admitted = append(admitted, plan)
	}
	return admitted, blocked
}

// inFlightNode describes a claim with no Node yet as capacity: its labels are its single-valued
// requirements; its allocatable the launched type's, or before launch the smallest type it admits.
//
// The labels are the claim's own map, shared read only, when it already holds every single-valued
// requirement (a launched claim carries its type, zone and capacity type as labels): a copy of each
// in-flight claim's labels per batch was most of what a snapshot allocated while thousands of
// claims launched.
func inFlightNode(nc *v1.NodeClaim, its []*catalog.InstanceType, nominated []*corev1.Pod, memo *allocatableMemo) solver.ExistingNode {
	labels := nc.Labels
	if !holdsSingleValues(nc.Labels, nc.Spec.Requirements) {
		labels = make(map[string]string, len(nc.Labels)+len(nc.Spec.Requirements))
		for k, v := range nc.Labels {
			labels[k] = v
		}
		for _, r := range nc.Spec.Requirements {
			if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				labels[r.Key] = r.Values[0]
			}
		}
	}
	allocatable := nc.Status.Allocatable
	if len(allocatable) == 0 {
		allocatable = memo.smallestAllocatable(nc, its)
	}
	return solver.ExistingNode{
		Name: nc.Name, NodeClaim: nc.Name, InFlight: true, NodePool: nc.Labels[v1.NodePoolLabelKey],
		Labels: labels, Taints: nc.Spec.Taints, Allocatable: allocatable, Pods: nominated,
	}
}

// holdsSingleValues reports whether labels already carry every single-valued In requirement, with its
// value.
func holdsSingleValues(labels map[string]string, reqs []v1.NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			if v, ok := labels[r.Key]; !ok || v != r.Values[0] {
				return false
			}
		}
	}
	return true
}

// smallestAllocatable is the per-resource minimum allocatable over the instance types the claim
// admits. A type's offerings (zones, capacity types) come one after the other and share its
// allocatable: it is computed once per type, not per offering (a map per offering of every in-flight
// claim was 15 MB of the heap at the peak of make bench-scale at 5,000 nodes).
func smallestAllocatable(nc *v1.NodeClaim, its []*catalog.InstanceType) corev1.ResourceList {
	if out := smallestOffered(nc.Spec.Requirements, its); out != nil {
		return out
	}
	return nc.Spec.Resources.Requests.DeepCopy()
}

// smallestOffered is the per-resource minimum allocatable over the instance types reqs admit with
// an available offering, or nil when none does.
func smallestOffered(reqs []v1.NodeSelectorRequirementWithMinValues, its []*catalog.InstanceType) corev1.ResourceList {
	var out corev1.ResourceList
	var last *catalog.InstanceType
	for _, l := range requirements.AvailableOfferings(reqs, its) {
		if l.InstanceType == last {
			continue
		}
		last = l.InstanceType
		a := l.InstanceType.Allocatable()
		if out == nil {
			out = a
			continue
		}
		for name, q := range out {
			if aq, ok := a[name]; !ok || aq.Cmp(q) < 0 {
				out[name] = aq
			}
		}
	}
	return out
}

// allocatableMemo remembers smallestOffered within one Build, by the claim's pool (whose instance
// types Build passes) and its requirements' content: the claims of a batch admit the same types, and each snapshot
// read every in-flight claim's offerings from the whole catalog again — the most of snapshot.Build's
// CPU at 20,000 pods, where thousands of claims wait for their launch across many batches (it grew
// with the claims in flight times the batches). Results are shared read only, as a launched claim's
// own allocatable is.
type allocatableMemo struct {
	byKey map[string]corev1.ResourceList
	key   []byte
}

func (m *allocatableMemo) smallestAllocatable(nc *v1.NodeClaim, its []*catalog.InstanceType) corev1.ResourceList {
	if m == nil || len(its) == 0 {
		return smallestAllocatable(nc, its)
	}
	m.key = appendField(m.key[:0], nc.Labels[v1.NodePoolLabelKey]) // its is that pool's list
	for _, r := range nc.Spec.Requirements {
		m.key = appendField(append(appendField(m.key, r.Key), r.Operator...), "")
		for _, v := range r.Values {
			m.key = appendField(m.key, v)
		}
		if r.MinValues != nil {
			m.key = strconv.AppendInt(append(m.key, 'm'), int64(*r.MinValues), 10)
		}
	}
	out, ok := m.byKey[string(m.key)]
	if !ok {
		out = smallestOffered(nc.Spec.Requirements, its)
		if m.byKey == nil {
			m.byKey = map[string]corev1.ResourceList{}
		}
		m.byKey[string(m.key)] = out
	}
	if out == nil {
		return nc.Spec.Resources.Requests.DeepCopy()
	}
	return out
}

// appendField appends f to the key, length first, so no two lists of fields make the same key.
func appendField(key []byte, f string) []byte {
	return append(strconv.AppendInt(append(key, '|'), int64(len(f)), 10), f...)
}
