// Package podkind says what kind of pod Joist is looking at — finished, DaemonSet-owned, mirror —
// the one classification the provisioner's snapshot, the guardrails and the disruption and
// termination loops all need the same way. It imports only the core API types, so every layer,
// policy included, can use it.
package podkind

import corev1 "k8s.io/api/core/v1"

// IsFinished reports whether the pod has terminated (Succeeded or Failed) and holds no capacity.
func IsFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// IsDaemonSet reports whether a DaemonSet controls the pod: it runs on every node it selects, so it
// never needs a node of its own and never blocks a node's removal.
func IsDaemonSet(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// IsMirror reports whether the pod is the kubelet's mirror of a static pod.
func IsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}
