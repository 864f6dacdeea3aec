package disruptionpolicy

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Room is what a node offers a pod the kube-scheduler might bind there now (RoomOn).
type Room struct {
	node *corev1.Node
	// taints are the node's taints but PlannedRemovalTaint: the question Room answers is whether the
	// node needs that mark.
	taints []corev1.Taint
	// free is the allocatable less the requests of the pods bound to the node.
	free corev1.ResourceList
	// podsFree is how many more pods the node takes, when it publishes a pods limit (podsLimited).
	podsFree    int64
	podsLimited bool
}

// RoomOn is the node's room with the pods bound to it (terminating ones included: the scheduler
// counts them until they are gone).
func RoomOn(node *corev1.Node, bound []*corev1.Pod) Room {
	r := Room{node: node, free: corev1.ResourceList{}}
	for _, t := range node.Spec.Taints {
		if t.Key != PlannedRemovalTaintKey {
			r.taints = append(r.taints, t)
		}
	}
	for name, q := range node.Status.Allocatable {
		r.free[name] = q.DeepCopy()
	}
	if limit, ok := node.Status.Allocatable[corev1.ResourcePods]; ok {
		r.podsFree, r.podsLimited = limit.Value()-int64(len(bound)), true
	}
	for _, p := range bound {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if free, ok := r.free[name]; ok {
				free.Sub(q)
				r.free[name] = free
			}
		}
	}
	return r
}

// CouldBind reports whether the kube-scheduler could bind pod on the node now, as far as the
// filters a pure check sees go: the node is schedulable, its NoSchedule and NoExecute taints are
// tolerated, its labels match the pod's node selector and required node affinity, and the room left
// holds the pod's requests and one pod more. Not seen: inter-pod (anti-)affinity, topology spread,
// host ports, volumes and nominations — each only rules nodes out, so CouldBind errs towards
// "could": a node it rules out cannot receive the pod now.
//
// Steering (controllers/disruption) marks only the nodes an evicted pod could bind on: a node with
// no room for any of them receives none, marked or not.
func (r Room) CouldBind(pod *corev1.Pod) bool {
	if r.node.Spec.Unschedulable || (r.podsLimited && r.podsFree < 1) {
		return false
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), r.taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); untolerated {
		return false
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(r.node); err != nil || !ok {
		return false
	}
	for name, req := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
		if req.IsZero() || name == corev1.ResourcePods {
			continue
		}
		free, ok := r.free[name]
		if !ok || req.Cmp(free) > 0 {
			return false
		}
	}
	return true
}
