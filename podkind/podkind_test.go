package podkind

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestKinds(t *testing.T) {
	t.Parallel()
	owned := func(kind string, controller bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: ptr.To(controller)}}}}
	}
	for _, tc := range []struct {
		name                     string
		pod                      *corev1.Pod
		finished, daemon, mirror bool
	}{
		{"plain", &corev1.Pod{}, false, false, false},
		{"succeeded", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true, false, false},
		{"failed", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, true, false, false},
		{"running", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false, false, false},
		{"daemonset-controlled", owned("DaemonSet", true), false, true, false},
		{"daemonset-owned, not controller", owned("DaemonSet", false), false, false, false},
		{"replicaset-controlled", owned("ReplicaSet", true), false, false, false},
		{"mirror", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "h"}}}, false, false, true},
	} {
		if got := IsFinished(tc.pod); got != tc.finished {
			t.Errorf("%s: IsFinished = %v", tc.name, got)
		}
		if got := IsDaemonSet(tc.pod); got != tc.daemon {
			t.Errorf("%s: IsDaemonSet = %v", tc.name, got)
		}
		if got := IsMirror(tc.pod); got != tc.mirror {
			t.Errorf("%s: IsMirror = %v", tc.name, got)
		}
	}
}
