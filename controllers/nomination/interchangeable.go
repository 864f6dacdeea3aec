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
// the pod's own (kube-scheduler's addGENominatedPods). Pods of one interchangeable class — the same
// requests, node selector, node affinity, tolerations, priority and scheduler, no topology spread,
// pod (anti-)affinity, host ports or volume claims — whose planned nodes hold only pods of that
// class need no steering: any of them fits any free slot of those nodes, the nominated pods of other
// classes keep their own room, and no other node of the plan has room for one of them. Those
// nominations are not written (5,000 of a 5,000-pod bench-scale run's ~33,000 apiserver writes).

// Interchangeable returns the pods of the admitted plans that need no nomination, by UID, each with
// its class. A class qualifies when every pod of it among pending (the pods handed to the solver)
// was planned onto plans that hold only pods of that class; its priority is no higher than any
// other planned pod's (the scheduler counts a lower-priority nominee's room as free for it); no
// other plan, nor existing node's placement, has room left for one of its pods; and the room its own
// nodes have left over, counted in its pods, is less than the fewest pods any of those nodes holds (so
// pods filling the slack of some nodes cannot leave one of them empty).
func Interchangeable(plans []solver.NodeClaimPlan, existing []solver.ExistingPlacement, pending []*corev1.Pod) map[types.UID]string {
	classOf := map[types.UID]string{}
	planClass := make([]string, len(plans)) // "" for a plan of mixed or ineligible pods
	sample := map[string]*corev1.Pod{}
	ok := map[string]bool{}
	for i := range plans {
		pure := len(plans[i].Pods) > 0
		for j, pod := range plans[i].Pods {
			k := classKey(pod)
			classOf[pod.UID] = k
			if sample[k] == nil {
				sample[k] = pod
			}
			if j == 0 {
				planClass[i] = k
			}
			pure = pure && k != "" && k == planClass[i]
		}
		if !pure {
			planClass[i] = ""
		}
		for _, pod := range plans[i].Pods {
			k := classOf[pod.UID]
			if _, seen := ok[k]; !seen {
				ok[k] = true
			}
			ok[k] = ok[k] && pure
		}
	}
	delete(ok, "")
	if len(ok) == 0 {
		return nil
	}
	// Every pending pod of the class must be on the class's own nodes: one placed elsewhere, or not
	// placed, would compete with them for their slots.
	for _, pod := range pending {
		if _, planned := classOf[pod.UID]; !planned {
			if k := classKey(pod); ok[k] {
				ok[k] = false
			}
		}
	}
	minPriority := int32(math.MaxInt32)
	for i := range plans {
		for _, pod := range plans[i].Pods {
			minPriority = min(minPriority, priorityOf(pod))
		}
	}
	for _, pl := range existing {
		for _, pod := range pl.Pods {
			minPriority = min(minPriority, priorityOf(pod))
		}
	}
	for class := range ok {
		ok[class] = ok[class] && priorityOf(sample[class]) <= minPriority && roomConfined(class, sample[class], plans, planClass)
	}
	out := map[types.UID]string{}
	for uid, k := range classOf {
		if ok[k] {
			out[uid] = k
		}
	}
	return out
}

// roomConfined reports whether no plan outside the class has room left for one of its pods, and the
// room its own plans have left, counted in its pods, is less than the fewest pods one of them holds.
func roomConfined(class string, sample *corev1.Pod, plans []solver.NodeClaimPlan, planClass []string) bool {
	req := resourcehelper.PodRequests(sample, resourcehelper.PodResourcesOptions{})
	slack, fewest := int64(0), int64(math.MaxInt64)
	for i := range plans {
		pl := &plans[i]
		if pl.InstanceType == nil {
			return false
		}
		room := roomFor(pl.InstanceType.Allocatable(), pl.Requests, int64(len(pl.Pods)), req)
		if planClass[i] == class {
			slack += room
			fewest = min(fewest, int64(len(pl.Pods)))
		} else if room > 0 {
			return false // a node of the plan outside the class has room for one of its pods
		}
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
