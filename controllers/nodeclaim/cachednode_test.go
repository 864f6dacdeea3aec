package nodeclaim_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// The lifecycle reads a claim's Node from the informer's store, not through a List that copies it
// on every reconcile of a claim waiting to initialize, and changes only a copy of it: the store's
// object is left as the watch delivered it.
func TestInitializeReadsTheStoresNodeWithoutChangingIt(t *testing.T) {
	ctx := context.Background()
	nc, node := registeredClaim("general-n")
	nodeLists := 0
	kube := interceptor.NewClient(newClient(nc, node.DeepCopy()).(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.NodeList); ok {
				nodeLists++
			}
			return c.List(ctx, list, opts...)
		},
	})
	store := storesHolding(t, nc.DeepCopy(), node)
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
