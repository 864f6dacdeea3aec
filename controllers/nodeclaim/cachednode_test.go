package nodeclaim_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// nodeStore hands out a client-go informer whose store holds the nodes (never started).
type nodeStore struct {
	ctrlcache.Informers // only GetInformer is called
	nodes               toolscache.SharedIndexInformer
}

func (s nodeStore) GetInformer(_ context.Context, obj client.Object, _ ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	if _, ok := obj.(*corev1.Node); ok {
		return s.nodes, nil
	}
	return nil, nil
}

// The lifecycle reads a claim's Node from the informer's store, not through a List that copies it
// on every reconcile of a claim waiting to initialize, and changes only a copy of it: the store's
// object is left as the watch delivered it.
func TestInitializeReadsTheStoresNodeWithoutChangingIt(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "general-n", Labels: map[string]string{v1.NodeRegisteredLabelKey: "true"}},
		Spec:   corev1.NodeSpec{ProviderID: "kwok://general-n"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	nc := launchClaim("general-n")
	nc.Status.ProviderID, nc.Status.NodeName = node.Spec.ProviderID, node.Name
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	nodeLists := 0
	kube := interceptor.NewClient(newClient(nc, node.DeepCopy()).(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.NodeList); ok {
				nodeLists++
			}
			return c.List(ctx, list, opts...)
		},
	})
	store := nodeStore{nodes: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.Node{}, 0, toolscache.Indexers{})}
	if err := store.nodes.GetStore().Add(node); err != nil {
		t.Fatal(err)
	}
	c := nodeclaim.New(kube, fakeCloud{}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	c.SetInformers(store)
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || !got.IsTrue(v1.ConditionTypeInitialized) {
		t.Fatalf("claim not Initialized (err %v, %v)", err, got.GetCondition(v1.ConditionTypeInitialized))
	}
	written := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), written); err != nil || written.Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Fatalf("node labels %v (err %v), want the initialized label written", written.Labels, err)
	}
	if nodeLists != 0 {
		t.Errorf("%d Node lists through the client, want 0: the store has the Node", nodeLists)
	}
	if _, ok := node.Labels[v1.NodeInitializedLabelKey]; ok {
		t.Error("the store's Node was changed in place")
	}
}
