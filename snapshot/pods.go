package snapshot

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/podkind"
)

// Provisionable reports whether Joist should find capacity for the pod: unbound, not finished, not
// being deleted, not gated, not a DaemonSet or mirror pod, and either marked Unschedulable by the
// kube-scheduler or not yet attempted by it. Counting not-yet-attempted pods lets a batch start with
// the pods' creation instead of waiting for the scheduler to get to them; the solver places a pod
// that fits existing or in-flight capacity there, so no node is launched for it.
//
// A pod naming another scheduler (spec.schedulerName) counts, as in Karpenter, only once its
// scheduler has marked it Unschedulable: the default scheduler never tries it, and a pod whose
// scheduler is not running would otherwise get capacity it never uses. The solver then places it
// by the default scheduler's rules, as Karpenter does.
func Provisionable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() || len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	if podkind.IsFinished(pod) || podkind.IsDaemonSet(pod) || podkind.IsMirror(pod) {
		return false
	}
	if name := pod.Spec.SchedulerName; name != "" && name != corev1.DefaultSchedulerName {
		return MarkedUnschedulable(pod)
	}
	return scheduledCondition(pod) == nil || MarkedUnschedulable(pod)
}

// scheduledCondition returns the pod's PodScheduled condition, or nil before the kube-scheduler
// has tried it.
func scheduledCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ScheduledMessage is the message of the pod's PodScheduled condition.
func ScheduledMessage(pod *corev1.Pod) string {
	if c := scheduledCondition(pod); c != nil {
		return c.Message
	}
	return ""
}

// MarkedUnschedulable reports whether the kube-scheduler's last attempt found no node for the pod.
func MarkedUnschedulable(pod *corev1.Pod) bool {
	c := scheduledCondition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
}
