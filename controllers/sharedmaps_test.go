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
	// a/b: labels, requests, containers; c: labels, requests, containers; all: annotations, node
	// selector, limits.
	if n := shared.size(); n != 9 {
		t.Errorf("%d distinct maps held, want 9", n)
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

// Pods with equal containers (as trimmed) share one container list; a list that differs in any
// field the trim keeps (name, a request or limit, a host port, a resource claim, the restart policy)
// is its own, and sharing changes no value.
func TestCachedPodsShareEqualContainerLists(t *testing.T) {
	shared := newSharedMaps()
	always := corev1.ContainerRestartPolicyAlways
	base := func() corev1.Container {
		return corev1.Container{Name: "app", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m")}}}
	}
	pod := func(name string, change func(*corev1.Container)) *corev1.Pod {
		c := base()
		if change != nil {
			change(&c)
		}
		out, err := shared.trimAndSharePod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.Pod)
	}
	same := func(a, b *corev1.Pod) bool { return &a.Spec.Containers[0] == &b.Spec.Containers[0] }
	a, b := pod("a", nil), pod("b", func(c *corev1.Container) { c.Image = "other" }) // the image is trimmed away
	if !same(a, b) {
		t.Error("two pods with equal trimmed containers hold separate lists")
	}
	for what, change := range map[string]func(*corev1.Container){
		"name":    func(c *corev1.Container) { c.Name = "web" },
		"request": func(c *corev1.Container) { c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1") },
		"limit": func(c *corev1.Container) {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m")}
		},
		"host port":      func(c *corev1.Container) { c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}} },
		"resource claim": func(c *corev1.Container) { c.Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}} },
		"restart policy": func(c *corev1.Container) { c.RestartPolicy = &always },
	} {
		if p := pod(what, change); same(a, p) {
			t.Errorf("a pod whose container differs in its %s shares the list of one that does not", what)
		}
	}
	want := corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m")}}}
	if !reflect.DeepEqual(b.Spec.Containers, []corev1.Container{want}) {
		t.Errorf("shared containers read %+v, want %+v", b.Spec.Containers, want)
	}
}

// The container list's key covers every field trimContainers keeps: a container with each field
// set, trimmed, has non-zero values only in fields the key is written from.
func TestContainerListKeyCoversTheTrimmedFields(t *testing.T) {
	var c corev1.Container
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
	}
	c.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Claims: []corev1.ResourceClaim{{Name: "x"}}}
	c.Ports = []corev1.ContainerPort{{HostPort: 1}}
	trimmed := reflect.ValueOf(trimContainers([]corev1.Container{c})[0])
	keyed := map[string]bool{"Name": true, "Resources": true, "Ports": true, "RestartPolicy": true} // writeContainerRest, shareContainers
	for i := range trimmed.NumField() {
		if name := trimmed.Type().Field(i).Name; !trimmed.Field(i).IsZero() && !keyed[name] {
			t.Errorf("trimContainers keeps %s, which the container list's key does not cover", name)
		}
	}
}
