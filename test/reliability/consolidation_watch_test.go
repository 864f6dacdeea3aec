package reliability

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The PDB watch counts a violation exactly when a Deployment is short of more pods than its PDB
// allows while evicted pods are out — the check the crash trials assert, on pods made up here.
func TestPodWatchCountsPDBViolations(t *testing.T) {
	deploys := deployments(12) // 3 pods each
	for _, d := range deploys {
		d.Spec.Replicas = ptr.To(int32(3))
	}
	pod := func(app string, i int, ready, terminating, wasEvicted bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Namespace: "default", UID: types.UID(fmt.Sprintf("%s-%d", app, i)),
			Labels: map[string]string{"app": app}}}
		if ready {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		if wasEvicted {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want int
	}{
		{"one evicted, replacement ready", []*corev1.Pod{pod("app-0", 0, true, false, false), pod("app-0", 1, true, false, false),
			pod("app-0", 2, true, true, true), pod("app-0", 3, true, false, false)}, 0},
		{"one evicted, replacement pending: within maxUnavailable 1", []*corev1.Pod{pod("app-0", 0, true, false, false), pod("app-0", 1, true, false, false),
			pod("app-0", 2, true, true, true), pod("app-0", 3, false, false, false)}, 0},
		{"two evicted at once", []*corev1.Pod{pod("app-0", 0, true, false, false), pod("app-0", 1, true, true, true),
			pod("app-0", 2, true, true, true), pod("app-0", 3, false, false, false), pod("app-0", 4, false, false, false)}, 1},
		{"two short without eviction (scale-down, start-up)", []*corev1.Pod{pod("app-0", 0, true, false, false), pod("app-0", 1, false, false, false),
			pod("app-0", 2, false, false, false)}, 0},
		{"minAvailable 50% of 3 allows 1, two out", []*corev1.Pod{pod("app-2", 0, true, false, false), pod("app-2", 1, true, true, true),
			pod("app-2", 2, true, true, true), pod("app-2", 3, false, false, false), pod("app-2", 4, false, false, false)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &podWatch{pods: map[types.UID]*corev1.Pod{}, terminatingSince: map[types.UID]time.Time{}, inViolation: map[string]bool{}, unschedulable: map[string]bool{}}
			w.arm(pdbsFor(deploys), []*appsv1.Deployment(deploys))
			for _, p := range tc.pods {
				w.observe(p, false)
			}
			if got := len(w.result().violations); got != tc.want {
				t.Errorf("%d violations, want %d: %v", got, tc.want, w.result().violations)
			}
		})
	}
}
