package nodeclaim_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// informerStores hands out client-go informers whose stores hold the claims and nodes (never started).
type informerStores struct {
	ctrlcache.Informers // only GetInformer is called
	claims, nodes       toolscache.SharedIndexInformer
}

func (s informerStores) GetInformer(_ context.Context, obj client.Object, _ ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	switch obj.(type) {
	case *v1.NodeClaim:
		return s.claims, nil
	case *corev1.Node:
		return s.nodes, nil
	}
	return nil, nil
}

// storesHolding is an informerStores whose stores hold exactly these objects, as given (not copied).
func storesHolding(t *testing.T, claim *v1.NodeClaim, node *corev1.Node) informerStores {
	t.Helper()
	s := informerStores{
		claims: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &v1.NodeClaim{}, 0, toolscache.Indexers{}),
		nodes:  toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.Node{}, 0, toolscache.Indexers{}),
	}
	if err := s.claims.GetStore().Add(claim); err != nil {
		t.Fatal(err)
	}
	if err := s.nodes.GetStore().Add(node); err != nil {
		t.Fatal(err)
	}
	return s
}

// registeredClaim is a launched and registered claim and its Ready Node, waiting to initialize.
func registeredClaim(name string) (*v1.NodeClaim, *corev1.Node) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodeRegisteredLabelKey: "true"}},
		Spec:   corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	nc := launchClaim(name)
	nc.Status.ProviderID, nc.Status.NodeName = node.Spec.ProviderID, node.Name
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	return nc, node
}

// The lifecycle reads the claim from the informer's store (no cached Get and its deep copy), runs
// its steps on one copy, leaves the store's object as the watch delivered it, and asks for the
// status write's answer as metadata only: nothing decodes the whole claim the apiserver returns.
func TestReconcileReadsTheStoresClaimAndAsksForMetadataOnly(t *testing.T) {
	ctx := context.Background()
	nc, node := registeredClaim("general-s")
	claimGets := 0
	var answers []string
	kube := interceptor.NewClient(newClient(nc.DeepCopy(), node.DeepCopy()).(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok {
				claimGets++
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			switch obj.(type) {
			case *metav1.PartialObjectMetadata:
				answers = append(answers, "metadata")
			default:
				answers = append(answers, "object")
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	stored := nc.DeepCopy()
	store := storesHolding(t, stored, node)
	c := nodeclaim.New(kube, fakeCloud{}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	c.SetInformers(store)
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	if claimGets != 0 {
		t.Errorf("%d NodeClaim Gets through the client, want 0: the store has the claim", claimGets)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || !got.IsTrue(v1.ConditionTypeInitialized) {
		t.Fatalf("claim not Initialized (err %v, %v)", err, got.GetCondition(v1.ConditionTypeInitialized))
	}
	if !equality.Semantic.DeepEqual(stored, nc) {
		t.Errorf("the store's claim was changed in place: %+v", stored.Status)
	}
	if len(answers) != 1 || answers[0] != "metadata" {
		t.Errorf("status writes decoded as %v, want one answered as metadata only", answers)
	}
}
