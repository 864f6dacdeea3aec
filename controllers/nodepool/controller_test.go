package nodepool_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nodepool"
	"github.com/joist-dev/joist/test/env"
)

func TestMain(m *testing.M) {
	env.DiscardLogs()
	os.Exit(m.Run())
}

// The pool carries its template hash and version as Karpenter stamps them (a Karpenter pool with
// the same template has the same annotations), and a template change restamps it.
func TestReconcileStampsTheTemplateHash(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "general", Annotations: map[string]string{v1.NodePoolHashVersionAnnotationKey: "v2", "team": "a"}},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
			ExpireAfter:  v1.MustParseNillableDuration("720h"),
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/os", Operator: "In", Values: []string{"linux"}}},
		}}},
	}
	if err := e.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	c := nodepool.New(e.Client)
	check := func(want string) {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: np.Name}}); err != nil {
			t.Fatal(err)
		}
		got := &v1.NodePool{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			t.Fatal(err)
		}
		if got.Annotations[v1.NodePoolHashAnnotationKey] != want || got.Annotations[v1.NodePoolHashVersionAnnotationKey] != "v3" {
			t.Errorf("annotations %v, want hash %s version v3", got.Annotations, want)
		}
		if got.Annotations["team"] != "a" {
			t.Errorf("other annotations lost: %v", got.Annotations)
		}
	}
	// Karpenter v1.15.0's NodePool.Hash of this template (the apiserver's defaults included).
	check("329923811497465139")

	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.Labels = map[string]string{"tier": "web"}
	if err := e.Client.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	want := np.Hash()
	if want == "329923811497465139" {
		t.Fatal("a template label did not change the hash")
	}
	check(want)
}

// The pool's NodeClass is read from the informer cache when Joist knows its kind: every claim event
// of a pool reconciles it, and an uncached read was one apiserver GET each (~200 in 30 s at 1,000
// nodes in make bench-scale).
func TestNodeClassReadFromTheCache(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var gets atomic.Int64
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/kwoknodeclasses/default") {
				gets.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	informers, err := cache.New(cfg, cache.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	kube, err := client.New(cfg, client.Options{Scheme: e.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		t.Fatal(err)
	}
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "img"}}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/os", Operator: "In", Values: []string{"linux"}}},
	}}}}
	for _, obj := range []client.Object{nc, np} {
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	c := nodepool.New(kube)
	const reconciles = 5
	for range reconciles {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: np.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	got := &v1.NodePool{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(v1.ConditionTypeReady) {
		t.Fatalf("the pool is not Ready with its KWOKNodeClass present: %+v", got.Status.Conditions)
	}
	if n := gets.Load(); n != 0 {
		t.Fatalf("%d reconciles read the KWOKNodeClass from the apiserver %d times, want 0 (the cache)", reconciles, n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
