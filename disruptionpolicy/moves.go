package disruptionpolicy

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Moves remembers the workloads whose pods voluntary disruption commands evicted: for each pod
// controller (by UID), when the first command that evicted one of its pods executed. A pod of such
// a controller created since then is a moved replica — the re-creation of an evicted pod (or a
// scale-up, which cannot be told apart and is treated alike).
//
// Consolidation prefers nodes that host no moved replica: a budget lets only a few nodes go at a
// time, the replicas of the first command land on the emptiest nodes (the kube-scheduler's default
// scoring spreads them there, and so does a plan that fills free room first), and those are exactly
// the next command's best candidates — so without the preference the same replicas are moved again
// a command later.
type Moves map[types.UID]time.Time

// Record notes that a command executed at executed evicts pods of the given controllers.
func (m Moves) Record(owners []types.UID, executed time.Time) {
	for _, o := range owners {
		if t, ok := m[o]; !ok || executed.Before(t) {
			m[o] = executed
		}
	}
}

// ForgetBefore drops the workloads first moved before the given time.
func (m Moves) ForgetBefore(before time.Time) {
	for o, executed := range m {
		if executed.Before(before) {
			delete(m, o)
		}
	}
}

// MovedReplica returns a pod among pods that is a moved replica, or nil.
func (m Moves) MovedReplica(pods []*corev1.Pod) *corev1.Pod {
	if len(m) == 0 {
		return nil
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || !Movable(p) {
			continue
		}
		executed, ok := m[ref.UID]
		// creationTimestamp has a resolution of one second: a pod created in the second the command
		// executed counts as moved.
		if ok && !p.CreationTimestamp.Time.Before(executed.Truncate(time.Second)) {
			return p
		}
	}
	return nil
}

// Owners returns the controllers of the movable pods among pods.
func Owners(pods []*corev1.Pod) []types.UID {
	seen := map[types.UID]bool{}
	var out []types.UID
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || !Movable(p) || seen[ref.UID] {
			continue
		}
		seen[ref.UID] = true
		out = append(out, ref.UID)
	}
	return out
}
