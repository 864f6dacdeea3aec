package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/joist-dev/joist/test/env"
)

// A pass reads the informer cache's pods and nodes themselves: no typed-list copy of every pod (~1.2 KB
// each, 60 MB a pass at 50,000 pods) or node, which a List makes even without deep copies.
func TestPassReadsTheCachedPodsWithoutCopies(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx, informers, kube := e.StartTestCache(t, cache.Options{}, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	nodeInf, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	store := inf.(toolscache.SharedIndexInformer).GetStore()
	var cached, cachedNode any
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var ok bool
		cached, ok, err = store.GetByKey("default/app")
		if !ok || err != nil {
			return false, err
		}
		cachedNode, ok, err = nodeInf.(toolscache.SharedIndexInformer).GetStore().GetByKey("node-a")
		return ok, err
	}); err != nil {
		t.Fatal("the cache never showed the pod and the node")
	}

	c := New(kube, e.Client, noDrift{}, nil, nil, events.NewFakeRecorder(10), clock.RealClock{}, DefaultOptions())
	c.informers = informers
	cl, err := c.readCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := cl.podsByNode["node-a"]
	if len(got) != 1 {
		t.Fatalf("the pass read %d pods on node-a, want the 1 created", len(got))
	}
	if got[0] != cached.(*corev1.Pod) {
		t.Fatal("the pass read a copy of the cached pod, not the cache's own object")
	}
	if cl.nodes["node-a"] != cachedNode.(*corev1.Node) {
		t.Fatal("the pass read a copy of the cached node, not the cache's own object")
	}
}
