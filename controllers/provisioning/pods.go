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
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return true
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
