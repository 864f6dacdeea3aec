package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
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

// The pass reads the cache's own NodeClaims (no deep-copied list) and leaves them as they are: the
// status it observes (Consolidatable, lastPodEventTime), the hash it restamps and the deletion its
// own-writes overlay marks go on copies. Before, refresh deep-copied every claim because the status
// step and the overlay edited the claims they were given (and the patches decoded into them).
func TestPassLeavesTheCachedClaimsAlone(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx, informers, kube := e.StartTestCache(t, cache.Options{}, nil)
	_, _, repl := restartFixture(t, e.Client, "")
	stored := repl.DeepCopy()
	delete(repl.Annotations, v1.NodePoolHashVersionAnnotationKey) // stamped by an older version: restamped
	if err := e.Client.Patch(ctx, repl, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	inf, err := informers.GetInformer(ctx, &v1.NodeClaim{})
	if err != nil {
		t.Fatal(err)
	}
	store := inf.(toolscache.SharedIndexInformer).GetStore()
	var cached []*v1.NodeClaim
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		o, ok, err := store.GetByKey("repl-1")
		if !ok || err != nil || o.(*v1.NodeClaim).Annotations[v1.NodePoolHashVersionAnnotationKey] != "" {
			return false, err
		}
		cached = nil
		for _, o := range store.List() {
			cached = append(cached, o.(*v1.NodeClaim))
		}
		return len(cached) == 2, nil
	}); err != nil {
		t.Fatal("the cache never showed both claims")
	}
	before := make([]*v1.NodeClaim, len(cached))
	for i, nc := range cached {
		before[i] = nc.DeepCopy()
	}
	unchanged := func(when string) {
		t.Helper()
		for i, nc := range cached {
			if !equality.Semantic.DeepEqual(nc, before[i]) {
				t.Errorf("%s: the cached claim %s was modified:\n got %+v\nwant %+v", when, nc.Name, nc, before[i])
			}
		}
	}

	// A minute on: past the settle after the claims initialized, so the pass writes Consolidatable.
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Minute))
	c := New(kube, e.Client, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clk, DefaultOptions())
	c.informers = informers
	cl, err := c.readCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o, _, _ := store.GetByKey("node-a"); claimNamed(cl, "node-a") != o.(*v1.NodeClaim) {
		t.Error("the pass read a copy of the cached claim, not the cache's own object")
	}
	if err := passAndWrite(ctx, c); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "repl-1"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1.NodePoolHashVersionAnnotationKey] != v1.NodePoolHashVersion || !got.IsTrue(v1.ConditionTypeConsolidatable) {
		t.Fatalf("repl-1 not restamped and marked Consolidatable (annotations %v): the pass wrote nothing to check", got.Annotations)
	}
	unchanged("after a pass that restamped and patched statuses")

	// A claim a loop (with no other write pending) deleted a moment ago, still in the cache as it
	// was: marked deleted on a copy.
	cached = cached[:0]
	for _, o := range store.List() {
		cached = append(cached, o.(*v1.NodeClaim))
	}
	before = before[:0]
	for _, nc := range cached {
		before = append(before, nc.DeepCopy())
	}
	c = New(kube, e.Client, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clk, DefaultOptions())
	c.informers = informers
	c.writes.delete(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	if cl, err = c.readCluster(ctx); err != nil {
		t.Fatal(err)
	}
	if nc := claimNamed(cl, "node-a"); nc == nil || nc.DeletionTimestamp.IsZero() {
		t.Error("the claim deleted a moment ago is not marked deleted")
	}
	unchanged("after the overlay marked a deletion")
}
