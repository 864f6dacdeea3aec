package disruption

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
//     gone, as heldNodes), every other Joist node on which one of its evicted pods could bind is
//     marked too (steering; disruptionpolicy.Room.CouldBind): the pods it evicts can bind only on
//     the nodes its re-simulation placed them on (reserved, so held) and on the nodes of other
//     commands in flight. A node without room for any of them is left alone: it receives none
//     anyway, and each mark is a Node patch written and taken off around the drain. The marks are
//     written right before its claims are deleted, so the first eviction already finds them; the
//     pass after the drain puts the look-ahead's marks back;
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
// every Joist node that is not held, not being disrupted nor tainted disrupted, and on which one of
// the pods those commands evict could bind (disruptionpolicy.Room.CouldBind: taints, node
// affinity, room left); marked alone when not steering or when the marks are lifted. A node with no
// room for any evicted pod receives none, marked or not, so the marks steering writes (a Node patch
// each, written and taken off around every drain) are bounded by the nodes the evicted pods could
// otherwise land on, not by a size switch. Room that frees during the drain is marked on the next
// pass (every drainPoll while it drains). It also returns how many nodes it left unmarked for lack
// of room, for the debug log.
func (c *Controller) withSteering(cl *cluster, marked, held map[string]bool, lift bool) (map[string]bool, int) {
	if lift {
		return marked, 0
	}
	evicted := c.steeredPods()
	if len(evicted) == 0 {
		return marked, 0
	}
	out := make(map[string]bool, len(marked))
	maps.Copy(out, marked)
	noRoom := 0
	for _, nc := range cl.claims {
		node := cl.nodes[nc.Status.NodeName]
		if node == nil || out[node.Name] || held[node.Name] || !node.DeletionTimestamp.IsZero() || !nc.DeletionTimestamp.IsZero() || disruptionpolicy.HasDisruptedTaint(node) {
			continue
		}
		room := disruptionpolicy.RoomOn(node, cl.podsByNode[node.Name])
		if !slices.ContainsFunc(evicted, room.CouldBind) {
			noRoom++
			continue
		}
		out[node.Name] = true
	}
	return out, noRoom
}

// steeredPods are the pods, one per workload (they share a template), of this process's executing
// commands that drain, or whose nodes went less than destinationGrace ago (the state heldNodes last
// updated); none when not steering.
func (c *Controller) steeredPods() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	var out []*corev1.Pod
	seen := map[types.UID]bool{}
	for _, r := range c.ownReserved {
		if !r.goneAt.IsZero() && now.Sub(r.goneAt) >= destinationGrace {
			continue
		}
		for _, p := range r.evicted {
			key := p.UID
			if ref := metav1.GetControllerOf(p); ref != nil {
				key = ref.UID
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, p)
			}
		}
	}
	return out
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
