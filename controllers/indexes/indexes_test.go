package indexes_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/test/env"
)

// CachedNodeForClaim finds the node with the claim's provider ID and returns the cache's own object
// (the same pointer on every read: no copy), nil for a claim with no node yet; without informers it
// lists the same node.
func TestCachedNodeForClaimReadsTheStore(t *testing.T) {
	e, ctx, informers := startIndexedCache(t)
	cached, err := client.New(e.Config, client.Options{Scheme: e.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node-a", "node-b"} {
		if err := e.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(providerID string) *v1.NodeClaim {
		return &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: providerID}}
	}
	read := func(nc *v1.NodeClaim) *corev1.Node {
		t.Helper()
		n, err := indexes.CachedNodeForClaim(ctx, informers, cached, nc)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return read(claim("kwok://node-b")) != nil, nil
	}); err != nil {
		t.Fatal("the cache never showed node-b")
	}
	first, second := read(claim("kwok://node-b")), read(claim("kwok://node-b"))
	if first.Name != "node-b" || first != second {
		t.Errorf("read %s then a different object (%v): want node-b, the cache's own both times", first.Name, first != second)
	}
	if n := read(claim("kwok://node-c")); n != nil {
		t.Errorf("a claim whose node does not exist found %s", n.Name)
	}
	if n := read(claim("")); n != nil {
		t.Errorf("a claim without a provider id found %s", n.Name)
	}
	listed, err := indexes.CachedNodeForClaim(ctx, nil, cached, claim("kwok://node-a"))
	if err != nil || listed == nil || listed.Name != "node-a" {
		t.Errorf("without informers: %v, %v; want node-a", listed, err)
	}
}

// startIndexedCache starts a control plane and an informer cache with Joist's indexes, stopped when
// the test ends.
func startIndexedCache(t *testing.T) (*env.Env, context.Context, cache.Cache) {
	t.Helper()
	e := env.New(t, env.Options{})
	ctx, informers, _ := e.StartTestCache(t, cache.Options{}, func(ctx context.Context, c cache.Cache) error {
		return indexes.Register(ctx, c)
	})
	return e, ctx, informers
}

// CachedPodByUID finds a pod by UID and returns the cache's own object, finds nothing for a UID no
// pod has or once the pod is deleted, and keeps no per-pod set in the pod store's indexes (a store
// index by UID held one per pod: most of the 28.6 MB the indexes held at 50,000 pods).
func TestCachedPodByUIDReadsTheStore(t *testing.T) {
	e, ctx, informers := startIndexedCache(t)
	const n = 50
	var uids []types.UID
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if err := e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		uids = append(uids, pod.UID)
	}
	read := func(uid types.UID) *corev1.Pod {
		t.Helper()
		p, err := indexes.CachedPodByUID(ctx, informers, nil, uid)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return read(uids[n-1]) != nil, nil
	}); err != nil {
		t.Fatal("the cache never showed the pods")
	}
	inf, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	indexer := inf.(toolscache.SharedIndexInformer).GetIndexer()
	for i, uid := range uids {
		p := read(uid)
		stored, _, _ := indexer.GetByKey("default/" + fmt.Sprintf("app-%d", i))
		if p == nil || p.Name != fmt.Sprintf("app-%d", i) || p != stored {
			t.Fatalf("uid of app-%d read %v: want the store's own app-%d", i, p, i)
		}
	}
	if p := read("no-such-uid"); p != nil {
		t.Errorf("an unknown uid found pod %s", p.Name)
	}
	for name := range indexer.GetIndexers() {
		if values := indexer.ListIndexFuncValues(name); len(values) >= n {
			t.Errorf("the pod store's index %s keeps %d values for %d pods: a set per pod", name, len(values), n)
		}
	}
	if err := e.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-0", Namespace: "default"}}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return read(uids[0]) == nil, nil
	}); err != nil {
		t.Error("a deleted pod is still found by its uid")
	}
}

// A store lookup allocates nothing for a pod by UID or a registered claim's node (read by name),
// and only ByIndex's result for a claim not registered yet: the informer is looked up once per
// cache, not through the scheme per call (one allocation more each), and no object is built per call
// to name it (~900 B each: at 5,000 pods / 1,000 nodes a quarter of all allocation). The release
// reads the node of every claim of its batch on each event.
func TestStoreLookupsAllocateLittle(t *testing.T) {
	e, ctx, informers := startIndexedCache(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node-a", "node-b"} {
		if err := e.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}); err != nil {
			t.Fatal(err)
		}
	}
	launched := &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "kwok://node-a"}}
	registered := &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "kwok://node-a", NodeName: "node-a"}}
	// A node name that belongs to another instance's node (a name reused) is not taken for the claim's.
	misnamed := &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "kwok://node-a", NodeName: "node-b"}}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		p, _ := indexes.CachedPodByUID(ctx, informers, nil, pod.UID)
		a, _ := indexes.CachedNodeForClaim(ctx, informers, nil, launched)
		b, _ := indexes.CachedNodeForClaim(ctx, informers, nil, &v1.NodeClaim{Status: v1.NodeClaimStatus{ProviderID: "kwok://node-b"}})
		return p != nil && a != nil && b != nil, nil
	}); err != nil {
		t.Fatal("the cache never showed the pod and the nodes")
	}
	for _, nc := range []*v1.NodeClaim{launched, registered, misnamed} {
		if n, err := indexes.CachedNodeForClaim(ctx, informers, nil, nc); err != nil || n == nil || n.Name != "node-a" {
			t.Errorf("claim of kwok://node-a with node name %q read %v, %v: want node-a", nc.Status.NodeName, n, err)
		}
	}
	var names []int
	allocs := func(read func() string) float64 {
		return testing.AllocsPerRun(100, func() { names = append(names[:0], len(read())) })
	}
	nodeOf := func(nc *v1.NodeClaim) func() string {
		return func() string {
			n, _ := indexes.CachedNodeForClaim(ctx, informers, nil, nc)
			return n.Name
		}
	}
	got := map[string]float64{
		"pod by uid": allocs(func() string {
			p, _ := indexes.CachedPodByUID(ctx, informers, nil, pod.UID)
			return p.Name
		}),
		"registered claim's node": allocs(nodeOf(registered)),
		"launched claim's node":   allocs(nodeOf(launched)),
	}
	want := map[string]float64{"pod by uid": 0, "registered claim's node": 0, "launched claim's node": 1}
	for what, n := range got {
		if n > want[what] {
			t.Errorf("%s: %.1f allocations per lookup, want at most %.0f", what, n, want[what])
		}
	}
}

// NodeClaims are indexed by their provisioning batch, so the release reads one batch's claims from
// the index instead of a label selector that scans every claim in the cache on each of its events.
func TestNodeClaimsByBatchReadTheIndex(t *testing.T) {
	e, ctx, informers := startIndexedCache(t)
	cached, err := client.New(e.Config, client.Options{Scheme: e.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		labels := map[string]string{v1.ProvisioningBatchLabelKey: fmt.Sprintf("batch-%d", i%3)}
		if i == 8 {
			labels = nil // a claim not made by a batch (a disruption replacement) is in no batch
		}
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%d", i), Labels: labels},
			Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
				NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}}
		if err := e.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	batch := func(name string) []string {
		t.Helper()
		list := &v1.NodeClaimList{}
		if err := cached.List(ctx, list, client.MatchingFields{indexes.NodeClaimBatch: name}, client.UnsafeDisableDeepCopy); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, nc := range list.Items {
			names = append(names, nc.Name)
		}
		slices.Sort(names)
		return names
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(batch("batch-1")) == 3, nil
	}); err != nil {
		t.Fatalf("batch-1 read %v: want its 3 claims", batch("batch-1"))
	}
	if got := batch("batch-2"); fmt.Sprint(got) != "[claim-2 claim-5]" {
		t.Errorf("batch-2 read %v: want [claim-2 claim-5] (claim-8 has no batch)", got)
	}
	if got := batch("batch-9"); len(got) != 0 {
		t.Errorf("a batch with no claims read %v", got)
	}
	// CachedClaimsOfBatch reads the same claims from the store's own index: the cache's objects (no
	// typed copy of the batch per read), and the field index's without informers.
	cachedBatch := func(informers cache.Informers, name string) ([]string, []*v1.NodeClaim) {
		t.Helper()
		claims, err := indexes.CachedClaimsOfBatch(ctx, informers, cached, name)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, nc := range claims {
			names = append(names, nc.Name)
		}
		slices.Sort(names)
		return names, claims
	}
	for _, name := range []string{"batch-0", "batch-1", "batch-2", "batch-9"} {
		fromStore, claims := cachedBatch(informers, name)
		listed, _ := cachedBatch(nil, name)
		if fmt.Sprint(fromStore) != fmt.Sprint(batch(name)) || fmt.Sprint(listed) != fmt.Sprint(fromStore) {
			t.Errorf("%s: store index read %v, without informers %v; want %v", name, fromStore, listed, batch(name))
		}
		for _, nc := range claims {
			stored, _ := informerObject(t, ctx, informers, nc.Name)
			if nc != stored {
				t.Errorf("%s: claim %s is not the store's own object", name, nc.Name)
			}
		}
	}
	var n []int
	if allocs := testing.AllocsPerRun(100, func() {
		claims, _ := indexes.CachedClaimsOfBatch(ctx, informers, cached, "batch-1")
		n = append(n[:0], len(claims))
	}); allocs > 2 { // the result and ByIndex's list
		t.Errorf("reading a batch of 3 allocated %.1f times", allocs)
	}
}

// informerObject is the claim informer's own object of that name.
func informerObject(t *testing.T, ctx context.Context, informers cache.Informers, name string) (*v1.NodeClaim, bool) {
	t.Helper()
	inf, err := informers.GetInformer(ctx, &v1.NodeClaim{})
	if err != nil {
		t.Fatal(err)
	}
	o, ok, _ := inf.(toolscache.SharedIndexInformer).GetIndexer().GetByKey(name)
	nc, _ := o.(*v1.NodeClaim)
	return nc, ok
}
