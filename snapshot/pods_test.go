package snapshot

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestProvisionable(t *testing.T) {
	unschedulable := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"marked unschedulable", corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{unschedulable}}}, true},
		{"not attempted yet", corev1.Pod{}, true},
		{"scheduler still trying (SchedulingGated reason)", corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}}, false},
		{"bound", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}, false},
		{"gated", corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "g"}}}}, false},
		{"finished", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		{"deleting", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: ptr.To(metav1.Now())}}, false},
		{"daemonset", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Controller: ptr.To(true)}}}}, false},
		{"another scheduler, not attempted", corev1.Pod{Spec: corev1.PodSpec{SchedulerName: "volcano"}}, false},
		{"another scheduler, marked unschedulable", corev1.Pod{Spec: corev1.PodSpec{SchedulerName: "volcano"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{unschedulable}}}, true},
		{"default scheduler named, not attempted", corev1.Pod{Spec: corev1.PodSpec{SchedulerName: corev1.DefaultSchedulerName}}, true},
		{"mirror", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, false},
	} {
		if got := Provisionable(&tc.pod); got != tc.want {
			t.Errorf("%s: provisionable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
