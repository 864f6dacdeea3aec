package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/disruptionpolicy"
)

// displacedPods are the pods about to need a new home: those still on Joist nodes being deleted (a
// command this loop just executed, or a drain a restarted manager took over), those on the nodes of
// commands in flight (inFlight, by node name), and the pending pods the snapshot has not placed. The planner sees neither (a deleting node is left out of the
// snapshot; pending pods are not planned), so without them the next command would take the room
// they are about to need, and the provisioner would launch new nodes for them.
func displacedPods(cl *cluster, pending []*corev1.Pod, inFlight map[string]bool) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pending...)
	for _, nc := range cl.claims {
		node := cl.nodes[nc.Status.NodeName]
		if node == nil || (nc.DeletionTimestamp.IsZero() && node.DeletionTimestamp.IsZero() && !inFlight[node.Name]) {
			continue
		}
		out = append(out, disruptionpolicy.DisplacedFrom(cl.podsByNode[node.Name])...)
	}
	return out
}
