package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/podkind"
)

// Evicted pods land where the plan put them.
//
// The kube-scheduler binds a re-created pod before Joist can nominate it, onto the node its scoring
// prefers (LeastAllocated: the emptiest). A PreferNoSchedule mark only lowers a node's score, so
// re-created pods landed on nodes the look-ahead removes next, and on nodes the plan did not use,
// which a later command removed: every such pod was evicted twice (the scale-down bench's 36 and 34
// repeats on main 93dd65d). So the marks are NoSchedule (disruptionpolicy.PlannedRemovalTaint):
//
//   - the look-ahead's removals are marked on every pass (markable), except the nodes a command in
//     flight holds (held: its destinations and replacements, the room an executing command reserved);
//   - while an executing command of this process drains (and destinationGrace after its nodes are
//     gone, as heldNodes), every other Joist node is marked too (steering): the pods it evicts can
//     bind only on the nodes its re-simulation placed them on (reserved, so held) and on the nodes
//     of other commands in flight. The marks are written right before its claims are deleted, so the
//     first eviction already finds them; the pass after the drain puts the look-ahead's marks back;
//   - all marks are lifted while a pod waits that no command evicted (a scale-up, a new workload),
//     or an evicted one has waited longer than stuckPending: a NoSchedule mark must not keep a pod
//     off room the cluster has, nor make the provisioner buy a node for it (liftMarks).
//
// The look-ahead and the re-simulation plan with the look-ahead's marks only (lastMarks), not the
// steering ones. Karpenter v1 taints only the nodes of the command it executes
// (karpenter.sh/disrupted:NoSchedule) and lets the kube-scheduler place the evicted pods anywhere
// else; Joist also taints the nodes the plan removes later and, while a drain lasts, the nodes the
// plan does not move pods onto.

// stuckPending is how long an evicted pod may wait before the marks are lifted for it: the drain
// evicts, the workload controller re-creates, the kube-scheduler binds within seconds when the
// planned room is there. Longer means it is not (the scheduler put another pod in it).
const stuckPending = 5 * time.Second

// steerMaxNodes bounds the nodes steering marks: each mark is a Node patch, written and taken off
// again around every drain; above it only the look-ahead's removals are marked.
const steerMaxNodes = 100

// markable are the look-ahead's removals a pass marks: not the nodes held by a command in flight,
// and none at all when the marks are lifted (liftMarks).
func markable(removals, held map[string]bool, lift bool) map[string]bool {
	out := map[string]bool{}
	if lift {
		return out
	}
	for n := range removals {
		if !held[n] {
			out[n] = true
		}
	}
	return out
}

// withSteering is marked plus, while one of this process's executing commands drains (steering),
// every Joist node that is not held, not being disrupted and not tainted disrupted; marked alone
// when not steering, when the marks are lifted, or when steering would mark more than steerMaxNodes.
func (c *Controller) withSteering(cl *cluster, marked, held map[string]bool, lift bool) map[string]bool {
	if lift || !c.steering() {
		return marked
	}
	out := map[string]bool{}
	for n := range marked {
		out[n] = true
	}
	for _, nc := range cl.claims {
		node := cl.nodes[nc.Status.NodeName]
		if node == nil || held[node.Name] || !node.DeletionTimestamp.IsZero() || !nc.DeletionTimestamp.IsZero() || disruptionpolicy.HasDisruptedTaint(node) {
			continue
		}
		out[node.Name] = true
	}
	if len(out) > steerMaxNodes {
		return marked
	}
	return out
}

// steering reports whether one of this process's executing commands drains, or its nodes went less
// than destinationGrace ago (the state heldNodes last updated).
func (c *Controller) steering() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for _, r := range c.ownReserved {
		if r.goneAt.IsZero() || now.Sub(r.goneAt) < destinationGrace {
			return true
		}
	}
	return false
}

// liftMarks reports whether a pod waits that no command evicted (a scale-up, a new workload), or an
// evicted one (a moved replica) has waited longer than stuckPending. DaemonSet pods do not count:
// their node is chosen for them.
func (c *Controller) liftMarks(cl *cluster, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range cl.pendingPods {
		if podkind.IsDaemonSet(p) {
			continue
		}
		if c.moves.MovedReplica([]*corev1.Pod{p}) == nil || now.Sub(p.CreationTimestamp.Time) > stuckPending {
			return true
		}
	}
	return false
}
