package nodepool_test

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
