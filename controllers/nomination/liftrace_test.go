package nomination

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/controllers/state"
)

// The pin lift that a pod's bind requeues must see the bind although the pods-by-UID map, kept by
// an event handler of its own, may not show it yet: the informer's store shows it before any handler
// runs. The watch mapper only maps (it records nothing), so the lift is what reads the bind.
//
// The race needs one handler of the pod informer to lag behind another, which a real cache does not
// order on demand: the fake client stands in for the cache, its UID lookup (a List by the PodUID
// index, CachedPodByUID's path without informers) answering with the pod as it was before the bind,
// its Get by name with the store's copy.
func TestPinLiftSeesABindTheUIDMapDoesNotShowYet(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: v1.NodeClaimStatus{ProviderID: "kwok://node-a", NodeName: "node-a"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "kwok://node-a", Taints: []corev1.Taint{pinTaint("node-a")}}}
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-a", Namespace: "default", UID: "pod-a-uid"},
		Spec: corev1.PodSpec{NodeName: "node-a", Tolerations: []corev1.Toleration{pinToleration("node-a")}}}
	before := bound.DeepCopy()
	before.Spec.NodeName = ""
	kube := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(claim, node, bound).
		WithIndex(&corev1.Node{}, indexes.NodeProviderID, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if pods, ok := list.(*corev1.PodList); ok {
				pods.Items = []corev1.Pod{*before.DeepCopy()} // the UID map's copy: not bound yet
				return nil
			}
			return c.List(ctx, list, opts...)
		},
	})
	store := state.NewNominations()
	c := New(kube, nil, store, func() {}, clocktesting.NewFakeClock(time.Now()), DefaultOptions())
	store.Nominate("node-a", bound.UID)
	ctx := context.Background()

	reqs := c.releaseKeyOfPod(ctx, bound)
	if len(reqs) != 1 || reqs[0].Namespace != pinKey || reqs[0].Name != "node-a" {
		t.Fatalf("the bind maps to %v, want node-a's pin lift", reqs)
	}
	if claim, ok := store.ClaimOf(bound.UID); !ok || claim != "node-a" {
		t.Fatalf("mapping the bind changed the store (pod planned onto %q, %v): a watch mapper only maps", claim, ok)
	}
	if _, err := c.liftPin(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "node-a"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 0 {
		t.Errorf("node-a keeps %v after its one planned pod bound: the lift read the UID map's copy from before the bind", got.Spec.Taints)
	}
}
