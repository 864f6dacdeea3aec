package disruptionpolicy

import (
	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// Cluster is what a disruption plan is made on, beyond the solver snapshot.
type Cluster struct {
	// Displaced are the pods about to need a new home: the pending pods and those still on nodes
	// being deleted. A plan must keep their room.
	Displaced []*corev1.Pod
	// Guardrails and NamespaceLabels (by namespace name) confine tenants' pods to their pools.
	Guardrails      []policyv1alpha1.Guardrail
	NamespaceLabels map[string]map[string]string
}

// Prepare turns the solver snapshot into the input every disruption method plans on (the
// controller's and `joist simulate --consolidate`'s alike): the displaced pods counted where they
// will land, every pod confined to its namespace's NodePools.
func Prepare(in solver.Input, c Cluster) solver.Input {
	return Confine(WithDisplaced(in, c.Displaced), c.Guardrails, c.NamespaceLabels)
}

// Candidate is the node as the consolidation planner takes it.
func Candidate(n Node, v Verdict) solver.Candidate {
	return solver.Candidate{Node: n.Node.Name, DisruptionCost: v.Cost,
		EmptyOnly: n.Pool != nil && n.Pool.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty}
}

// WithDisplaced places pods on the input's existing nodes as the solver would and counts them there,
// so a plan keeps their room. Pods that need a new node or fit nowhere are left to the provisioner.
// in's slices are not modified.
func WithDisplaced(in solver.Input, pods []*corev1.Pod) solver.Input {
	if len(pods) == 0 {
		return in
	}
	r := solver.Solve(solver.Input{Pods: pods, NodePools: in.NodePools, Nodes: in.Nodes, DaemonSets: in.DaemonSets,
		VolumeZones: in.VolumeZones, VolumeDrivers: in.VolumeDrivers})
	if len(r.ExistingPlacements) == 0 {
		return in
	}
	extra := map[string][]*corev1.Pod{}
	for _, pl := range r.ExistingPlacements {
		extra[pl.Node] = append(extra[pl.Node], pl.Pods...)
	}
	nodes := make([]solver.ExistingNode, len(in.Nodes))
	for i, n := range in.Nodes {
		if add := extra[n.Name]; len(add) > 0 {
			n.Pods = append(append([]*corev1.Pod(nil), n.Pods...), add...)
		}
		nodes[i] = n
	}
	in.Nodes = nodes
	return in
}

// DisplacedFrom are the pods of nodes being deleted that must move (movable, not terminating).
func DisplacedFrom(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if Movable(p) {
			out = append(out, p)
		}
	}
	return out
}
