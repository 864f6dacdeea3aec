package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/solver"
)

// displacedPods are the pods about to need a new home: those still on Joist nodes being deleted (a
// command this loop just executed, or a drain a restarted manager took over) and the pending pods
// the snapshot has not placed. The planner sees neither (a deleting node is left out of the
// snapshot; pending pods are not planned), so without them the next command would take the room
// they are about to need, and the provisioner would launch new nodes for them.
func displacedPods(cl *cluster, pending []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pending...)
	for _, nc := range cl.claims {
		node := cl.nodes[nc.Status.NodeName]
		if node == nil || (nc.DeletionTimestamp.IsZero() && node.DeletionTimestamp.IsZero()) {
			continue
		}
		for _, p := range cl.podsByNode[node.Name] {
			if movable(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// withDisplaced places pods on the input's existing nodes as the solver would and counts them there,
// so a plan keeps their room. Pods that need a new node or fit nowhere are left to the provisioner.
func withDisplaced(in solver.Input, pods []*corev1.Pod) solver.Input {
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
