package disruption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// displacedPods are the pods about to need a new home: those still on Joist nodes being deleted (a
// command this loop just executed, or a drain a restarted manager took over), those on the nodes of
// commands in flight (inFlight, by node name), and the pending pods the snapshot has not placed. The planner sees neither (a deleting node is left out of the
// snapshot; pending pods are not planned), so without them the next command would take the room
// they are about to need, and the provisioner would launch new nodes for them.
// A pod the snapshot already counts on another node than its own (the room an executing command
// reserved for it; in) is not displaced again.
func displacedPods(cl *cluster, pending []*corev1.Pod, inFlight map[string]bool, in solver.Input) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pending...)
	placed := map[types.UID]string{}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			placed[p.UID] = n.Name
		}
	}
	for _, nc := range cl.claims {
		node := cl.nodes[nc.Status.NodeName]
		if node == nil || (nc.DeletionTimestamp.IsZero() && node.DeletionTimestamp.IsZero() && !inFlight[node.Name]) {
			continue
		}
		for _, p := range disruptionpolicy.DisplacedFrom(cl.podsByNode[node.Name]) {
			if on, ok := placed[p.UID]; !ok || on == p.Spec.NodeName {
				out = append(out, p)
			}
		}
	}
	return out
}
