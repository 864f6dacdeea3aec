package nomination

import (
	"encoding/json"
	"math"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/joist-dev/joist/solver"
)

// A pod needs its status.nominatedNodeName only where the kube-scheduler would otherwise place it
// somewhere the plan does not hold room for it. The scheduler tries a pod's nominated node first,
// and when it filters a node for a pod it counts the pods nominated there with a priority at least
// the pod's own (kube-scheduler's addGENominatedPods). A batch whose pods are all of one
// interchangeable class — the same requests, node selector, node affinity, tolerations, priority and
// scheduler, no topology spread, pod (anti-)affinity, host ports or volume claims — needs no
// steering: any of its pods fits any free slot of its nodes, so whichever pod binds first to a slot,
// the rest still fit the slots left. Those nominations are not written (5,000 of a 5,000-pod
// bench-scale run's ~32,000 apiserver writes, and the kube-scheduler's per-pod work on nominated
// pods).
//
// Pods of another class in the same batch rule it out: a pod nominated to a node not released yet is
// tried on every node released meanwhile, and the un-nominated class's room there would be free for
// it (a bigger pod taking the room of several small ones strands them).

// Interchangeable returns the pods of the admitted plans that need no nomination, by UID, each with
// its class: all of them when every pending pod (the pods handed to the solver) is of one
// interchangeable class and was planned onto a new node, and the room the plan's nodes have left
// over, counted in the class's pods, is less than the fewest pods one of them holds (so pods filling
// the slack of some nodes cannot leave another empty); otherwise none.
func Interchangeable(plans []solver.NodeClaimPlan, pending []*corev1.Pod) map[types.UID]string {
	if len(pending) == 0 {
		return nil
	}
	class := classKey(pending[0])
	if class == "" {
		return nil
	}
	onPlans := map[types.UID]bool{}
	for i := range plans {
		for _, pod := range plans[i].Pods {
			onPlans[pod.UID] = true
		}
	}
	for _, pod := range pending {
		if !onPlans[pod.UID] || classKey(pod) != class {
			return nil // placed elsewhere or not at all, or of another class
		}
	}
	if !roomConfined(pending[0], plans) {
		return nil
	}
	out := make(map[types.UID]string, len(pending))
	for _, pod := range pending {
		out[pod.UID] = class
	}
	return out
}

// roomConfined reports whether the room the plans have left, counted in sample's pods, is less than
// the fewest pods one of them holds.
func roomConfined(sample *corev1.Pod, plans []solver.NodeClaimPlan) bool {
	req := resourcehelper.PodRequests(sample, resourcehelper.PodResourcesOptions{})
	slack, fewest := int64(0), int64(math.MaxInt64)
	for i := range plans {
		pl := &plans[i]
		if pl.InstanceType == nil {
			return false
		}
		slack += roomFor(pl.InstanceType.Allocatable(), pl.Requests, int64(len(pl.Pods)), req)
		fewest = min(fewest, int64(len(pl.Pods)))
	}
	return slack < fewest
}

// roomFor is how many more pods of req fit in allocatable beside used (requests of pods pods).
func roomFor(allocatable, used corev1.ResourceList, pods int64, req corev1.ResourceList) int64 {
	n := int64(math.MaxInt64)
	for name, q := range req {
		if q.IsZero() {
			continue
		}
		a, u := allocatable[name], used[name]
		free := a.DeepCopy()
		free.Sub(u)
		if free.Sign() <= 0 {
			return 0
		}
		n = min(n, free.MilliValue()/q.MilliValue())
	}
	if a, has := allocatable[corev1.ResourcePods]; has {
		n = min(n, a.Value()-pods)
	}
	return max(n, 0)
}

// classKey is what makes two pods interchangeable for the kube-scheduler, or "" for a pod whose
// placement depends on more than its own node's free room (spread, pod affinity, host ports, volume
// claims).
func classKey(pod *corev1.Pod) string {
	if countsOtherNodes(pod) || pod.Spec.NodeName != "" {
		return ""
	}
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return ""
		}
	}
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			for _, p := range containers[i].Ports {
				if p.HostPort != 0 {
					return ""
				}
			}
		}
	}
	var nodeAffinity *corev1.NodeAffinity
	if pod.Spec.Affinity != nil {
		nodeAffinity = pod.Spec.Affinity.NodeAffinity
	}
	requests := map[corev1.ResourceName]string{}
	for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		requests[name] = canonical(q)
	}
	b, err := json.Marshal(struct {
		Requests        map[corev1.ResourceName]string
		NodeSelector    map[string]string
		NodeAffinity    *corev1.NodeAffinity
		Tolerations     []corev1.Toleration
		Priority        int32
		SchedulerName   string
		RuntimeClass    *string
		PreemptionNever bool
	}{requests, pod.Spec.NodeSelector, nodeAffinity, pod.Spec.Tolerations, priorityOf(pod), pod.Spec.SchedulerName,
		pod.Spec.RuntimeClassName, pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever})
	if err != nil {
		return ""
	}
	return string(b)
}

func canonical(q resource.Quantity) string { return q.AsDec().String() }

func priorityOf(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// unsteered remembers the planned pods Interchangeable found need no nomination, each with its
// class (a small number shared by the class's pods).
type unsteered struct {
	mu    sync.Mutex
	pods  map[types.UID]uint32
	ids   map[string]uint32
	count map[uint32]int
	next  uint32
}

func newUnsteered() *unsteered {
	return &unsteered{pods: map[types.UID]uint32{}, ids: map[string]uint32{}, count: map[uint32]int{}}
}

// note records the pods (by UID, with their class).
func (u *unsteered) note(pods map[types.UID]string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for uid, class := range pods {
		id, ok := u.ids[class]
		if !ok {
			u.next++
			id = u.next
			u.ids[class] = id
		}
		if old, had := u.pods[uid]; had {
			u.count[old]--
		}
		u.pods[uid] = id
		u.count[id]++
	}
}

// classOf is the pod's class, and whether it needs no nomination.
func (u *unsteered) classOf(uid types.UID) (uint32, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	id, ok := u.pods[uid]
	return id, ok
}

// forget drops the pod: it needs its nomination written from now on (a rejection's renomination).
func (u *unsteered) forget(uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if id, ok := u.pods[uid]; ok {
		delete(u.pods, uid)
		u.count[id]--
	}
}

// keepOnly forgets the pods keep is false for, and the classes left without pods.
func (u *unsteered) keepOnly(keep func(types.UID) bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for uid, id := range u.pods {
		if !keep(uid) {
			delete(u.pods, uid)
			u.count[id]--
		}
	}
	for class, id := range u.ids {
		if u.count[id] <= 0 {
			delete(u.ids, class)
			delete(u.count, id)
		}
	}
}
