package controllers

import (
	"context"
	"reflect"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestCachedPodsShareEqualMaps checks the pod transform gives pods with equal labels, annotations,
// node selectors, requests and limits one copy of each (and pods that differ their own, with their
// own values), and that the shared copies are dropped once no pod holds them.
func TestCachedPodsShareEqualMaps(t *testing.T) {
	shared := newSharedMaps()
	pod := func(name, cpu, app string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": app, "tier": "web"},
				Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}, Containers: []corev1.Container{{Name: "app",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		}
		out, err := shared.trimAndSharePod(p)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Pod)
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }

	a, b, c := pod("a", "350m", "shop"), pod("b", "350m", "shop"), pod("c", "1", "blog")
	ra, rb, rc := a.Spec.Containers[0].Resources, b.Spec.Containers[0].Resources, c.Spec.Containers[0].Resources
	if !same(a.Labels, b.Labels) || !same(a.Annotations, b.Annotations) || !same(a.Spec.NodeSelector, b.Spec.NodeSelector) ||
		!same(ra.Requests, rb.Requests) || !same(ra.Limits, rb.Limits) {
		t.Error("two pods with equal maps hold separate copies")
	}
	if same(a.Labels, c.Labels) || same(ra.Requests, rc.Requests) || !same(a.Annotations, c.Annotations) || !same(ra.Limits, rc.Limits) {
		t.Error("pods share a map that differs between them, or do not share one that is equal")
	}
	if c.Labels["app"] != "blog" || rc.Requests.Cpu().String() != "1" || ra.Requests.Cpu().String() != "350m" || ra.Requests.Memory().String() != "1Gi" {
		t.Errorf("shared maps changed values: a %v %v, c %v %v", a.Labels, ra.Requests, c.Labels, rc.Requests)
	}
	// a/b: labels, requests; c: labels, requests; all: annotations, node selector, limits.
	if n := shared.size(); n != 7 {
		t.Errorf("%d distinct maps held, want 7", n)
	}
	runtime.KeepAlive([]*corev1.Pod{a, b, c})
	a, b, c = nil, nil, nil //nolint:ineffassign,wastedassign // the pods become unreachable for the collector
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		runtime.GC()
		return shared.size() == 0, nil
	})
	if err != nil {
		t.Errorf("%d shared maps still held after their pods were collected", shared.size())
	}
}
