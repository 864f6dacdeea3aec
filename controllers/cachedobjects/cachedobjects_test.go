package cachedobjects_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/test/env"
)

// The objects read are the cache's own (the same pointers on every read, no copy per read), the
// match function filters them, and without informers the same objects come from a List.
func TestObjectsAreTheCachesOwn(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx, informers, cached := e.StartTestCache(t, cache.Options{}, nil)
	for _, p := range []struct{ name, node string }{{"bound", "node-a"}, {"pending", ""}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if err := e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	read := func(match func(*corev1.Pod) bool) []*corev1.Pod {
		t.Helper()
		pods, err := cachedobjects.Objects(ctx, informers, cached, &corev1.PodList{}, match)
		if err != nil {
			t.Fatal(err)
		}
		return pods
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(read(nil)) == 2, nil
	}); err != nil {
		t.Fatalf("the cache never showed both pods: %d", len(read(nil)))
	}
	first, second := read(nil), read(nil)
	byName := map[string]*corev1.Pod{}
	for _, p := range first {
		byName[p.Name] = p
	}
	for _, p := range second {
		if byName[p.Name] != p {
			t.Errorf("pod %s was read into a new object the second time: a copy, not the cache's own", p.Name)
		}
	}
	pending := read(func(p *corev1.Pod) bool { return p.Spec.NodeName == "" })
	if len(pending) != 1 || pending[0].Name != "pending" || pending[0] != byName["pending"] {
		t.Errorf("matching unbound pods read %v, want the cache's pod pending", names(pending))
	}

	// Get reads one object from the same store: the cache's own pod, NotFound for one that is not
	// there, and through the client without informers.
	got, err := cachedobjects.Get[corev1.Pod](ctx, informers, cached, client.ObjectKey{Namespace: "default", Name: "pending"})
	if err != nil || got != byName["pending"] {
		t.Errorf("Get of pending read %p (%v), want the cache's own %p", got, err, byName["pending"])
	}
	if _, err := cachedobjects.Get[corev1.Pod](ctx, informers, cached, client.ObjectKey{Namespace: "default", Name: "gone"}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing pod: %v, want NotFound", err)
	}
	direct, err := cachedobjects.Get[corev1.Pod](ctx, nil, e.Client, client.ObjectKey{Namespace: "default", Name: "bound"})
	if err != nil || direct.Spec.NodeName != "node-a" || direct == byName["bound"] {
		t.Errorf("Get without informers read %v (%v), want a fresh copy of bound on node-a", direct, err)
	}

	listed, err := cachedobjects.Objects(ctx, nil, e.Client, &corev1.PodList{}, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].Name != "bound" {
		t.Errorf("without informers, matching bound pods listed %v, want [bound]", names(listed))
	}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}
