package provisioning

import (
	corev1 "k8s.io/api/core/v1"
)

// provisionable reports whether Joist should find capacity for the pod: unbound, not terminal, not
// being deleted, not gated, not a DaemonSet or mirror pod, and either marked Unschedulable by the
// kube-scheduler or not yet attempted by it. Counting not-yet-attempted pods lets a batch start with
// the pods' creation instead of waiting for the scheduler to get to them; the solver places a pod
// that fits existing or in-flight capacity there, so no node is launched for it.
func provisionable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || !pod.DeletionTimestamp.IsZero() || len(pod.Spec.SchedulingGates) > 0 {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if isDaemonSetPod(pod) || isMirrorPod(pod) {
		return false
	}
	return scheduledCondition(pod) == nil || markedUnschedulable(pod)
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

// scheduledMessage is the message of the pod's PodScheduled condition.
func scheduledMessage(pod *corev1.Pod) string {
	if c := scheduledCondition(pod); c != nil {
		return c.Message
	}
	return ""
}

// markedUnschedulable reports whether the kube-scheduler's last attempt found no node for the pod.
func markedUnschedulable(pod *corev1.Pod) bool {
	c := scheduledCondition(pod)
	return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
}

func isDaemonSetPod(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func isMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// isTerminal reports whether the pod has finished and holds no capacity.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
