package kwok_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// A KWOK launch without a registration delay writes the Node as registration leaves it, so the
// NodeClaim lifecycle launches and registers the claim in one reconcile with one Node write (the
// create) and no Node patch: the patch adding karpenter.sh/registered and the termination
// finalizer was one more apiserver round trip on a lifecycle worker per launch. Nor does it read
// the Node back after the create: the provider hands over the Node it wrote (WrittenNode).
func TestLaunchedNodeNeedsNoRegistrationPatch(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	_ = kwokv1alpha1.AddToScheme(scheme)
	nc := claim("default-abc")
	nc.UID = "uid-abc"
	nc.Labels = map[string]string{v1.NodePoolLabelKey: "default"}
	nc.Finalizers = []string{v1.TerminationFinalizer}
	writes := map[string]int{}
	count := func(verb string, obj client.Object) {
		if _, ok := obj.(*corev1.Node); ok && (verb != "get" || writes["create"] > 0) {
			writes[verb]++
		}
	}
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).
		WithObjects(nc, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "img"}}).
		WithStatusSubresource(&v1.NodeClaim{}).
		WithIndex(&corev1.Node{}, indexes.NodeProviderID, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				count("get", obj)
				return c.Get(ctx, key, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				count("create", obj)
				if err := c.Create(ctx, obj, opts...); err != nil {
					return err
				}
				obj.SetUID(types.UID("uid-" + obj.GetName())) // as the apiserver does; the fake does not
				return nil
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				count("patch", obj)
				return c.Patch(ctx, obj, patch, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				count("update", obj)
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
	lifecycle := nodeclaim.New(unseenNodes{kube}, newCloud(kube), nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	if _, err := lifecycle.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(v1.ConditionTypeLaunched) || !got.IsTrue(v1.ConditionTypeRegistered) || got.Status.NodeName != nc.Name {
		t.Fatalf("after one reconcile: launched %v, registered %v, node %q; want both on %s",
			got.IsTrue(v1.ConditionTypeLaunched), got.IsTrue(v1.ConditionTypeRegistered), got.Status.NodeName, nc.Name)
	}
	if writes["create"] != 1 || writes["patch"]+writes["update"]+writes["get"] != 0 {
		t.Errorf("Node requests after the launch's first read %v, want the one create and no patch, update or get", writes)
	}
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[v1.NodeRegisteredLabelKey] != "true" || node.Labels[v1.NodePoolLabelKey] != "default" ||
		!slices.Contains(node.Finalizers, v1.TerminationFinalizer) || !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey }) {
		t.Errorf("node labels %v, finalizers %v, taints %v: want the claim's labels, registered=true, the termination finalizer and the unregistered taint",
			node.Labels, node.Finalizers, node.Spec.Taints)
	}
}

// unseenNodes is a cache that has not shown any Node yet, as right after a launch.
type unseenNodes struct{ client.Client }

func (u unseenNodes) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.NodeList); ok {
		return nil
	}
	return u.Client.List(ctx, list, opts...)
}
