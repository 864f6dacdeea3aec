package nodeclaim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// TestRegistrationsGoAheadOfLaunches: a burst of claims to launch fills the lifecycle's queue; a
// claim whose instance is up and whose Node just appeared is reconciled (registered) before them,
// not after the whole burst has launched. Its pods wait for that step alone.
func TestRegistrationsGoAheadOfLaunches(t *testing.T) {
	ctx := context.Background()
	launched := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "up", CreationTimestamp: metav1.Now()}}
	launched.Status.ProviderID = "kwok://up"
	launched.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "up"}, Spec: corev1.NodeSpec{ProviderID: launched.Status.ProviderID}}
	c := nodeclaim.New(newClient(launched), fakeCloud{}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	claims := nodeclaim.ClaimEvents()
	nodes := c.NodeEvents().(handler.TypedEventHandler[client.Object, reconcile.Request])

	for _, tc := range []struct {
		name    string
		arrives func(q priorityqueue.PriorityQueue[reconcile.Request])
	}{
		{"its Node appears", func(q priorityqueue.PriorityQueue[reconcile.Request]) {
			nodes.Create(ctx, event.TypedCreateEvent[client.Object]{Object: node}, q)
		}},
		{"its launch is written", func(q priorityqueue.PriorityQueue[reconcile.Request]) {
			claims.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: &v1.NodeClaim{}, ObjectNew: launched}, q)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("lifecycle-test")
			defer q.ShutDown()
			for i := range 50 {
				claims.Create(ctx, event.TypedCreateEvent[client.Object]{Object: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("new-%02d", i)}}}, q)
			}
			tc.arrives(q)
			waitForLen(t, q, 51)
			first, _ := q.Get()
			if first.Name != launched.Name {
				t.Errorf("first claim reconciled = %s, want %s (waiting to register) ahead of the 50 launches", first.Name, launched.Name)
			}
		})
	}
}

// waitForLen waits for the queue's buffered adds to land.
func waitForLen(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request], n int) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() >= n, nil
	}); err != nil {
		t.Fatalf("queue length %d, want %d", q.Len(), n)
	}
}
