package nomination

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// laggingNodes serves the frozen Nodes as a cache that has not seen their latest writes would, and
// counts the patches per Node.
type laggingNodes struct {
	client.Client
	mu      sync.Mutex
	frozen  map[string]*corev1.Node
	patches map[string]int
}

func (l *laggingNodes) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if nodes, ok := list.(*corev1.NodeList); ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i := range nodes.Items {
			if n := l.frozen[nodes.Items[i].Name]; n != nil {
				nodes.Items[i] = *n.DeepCopy()
			}
		}
	}
	return nil
}

func (l *laggingNodes) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*corev1.Node); ok {
		l.mu.Lock()
		l.patches[obj.GetName()]++
		l.mu.Unlock()
	}
	return l.Client.Patch(ctx, obj, patch, opts...)
}

// A release pass that runs while the cache still shows a node it released with the unregistered
// taint does not lift that taint again — the patch's test of the taints it replaces would fail,
// and cost the pass a retry and the other nodes' lifts with it — and releases the batch's newly
// Ready node at once.
func TestReleaseDoesNotLiftAgainWhatTheCacheShowsLate(t *testing.T) {
	h := startWith(t, nominating(), false)
	h.claimWithNode(t, "node-a", "batch-1", true)
	h.claimWithNode(t, "node-b", "batch-1", false)
	cachedReady := func(name string) func() (bool, string) {
		return func() (bool, string) {
			n := &corev1.Node{}
			err := h.kube.Get(context.Background(), client.ObjectKey{Name: name}, n)
			return err == nil && readyButUnregistered(n), name + " not Ready in the cache yet"
		}
	}
	eventually(t, "node-a Ready in the cache", 10*time.Second, cachedReady("node-a"))
	staleA := &corev1.Node{}
	if err := h.kube.Get(context.Background(), client.ObjectKey{Name: "node-a"}, staleA); err != nil {
		t.Fatal(err)
	}
	lag := &laggingNodes{Client: h.kube, frozen: map[string]*corev1.Node{"node-a": staleA}, patches: map[string]int{}}
	c := New(lag, nil, h.store, func() {}, clock.RealClock{}, nominating())
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: batchKey, Name: "batch-1"}}
	ctx := context.Background()
	if res, err := c.Release(ctx, req); err != nil || !res.IsZero() {
		t.Fatalf("first release = %+v, %v; want node-a released", res, err)
	}

	h.setReady(t, "node-b", true)
	eventually(t, "node-b Ready in the cache", 10*time.Second, cachedReady("node-b"))
	res, err := c.Release(ctx, req)
	if err != nil || !res.IsZero() {
		t.Errorf("second release = %+v, %v; want node-b released without a retry", res, err)
	}
	if lag.patches["node-a"] != 1 {
		t.Errorf("node-a patched %d times, want once: the cache's late copy made the release lift it again", lag.patches["node-a"])
	}
	for _, name := range []string{"node-a", "node-b"} {
		n := &corev1.Node{}
		n.Name = name
		h.get(t, n)
		if tainted(n) {
			t.Errorf("%s still has the unregistered taint", name)
		}
	}
	if !h.store.IsReleased("node-a") || !h.store.IsReleased("node-b") {
		t.Error("released nodes not marked released")
	}
}
