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

// A claim update that changed only the disruption controller's conditions or lastPodEventTime (its
// status step's writes) does not enqueue the claim: no lifecycle step reads them. Any other change —
// a lifecycle condition, the Ready roll-up, a label, the deletion — does.
func TestDisruptionStatusWritesDoNotEnqueueTheLifecycle(t *testing.T) {
	ctx := context.Background()
	base := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1", Labels: map[string]string{v1.NodePoolLabelKey: "default"}}}
	base.Status.ProviderID = "kwok://c"
	base.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	base.SetCondition(v1.ConditionTypeConsolidatable, metav1.ConditionFalse, "Busy", "")
	claims := nodeclaim.ClaimEvents()
	for _, tc := range []struct {
		name    string
		change  func(nc *v1.NodeClaim)
		enqueue bool
	}{
		{"Consolidatable set", func(nc *v1.NodeClaim) {
			nc.SetCondition(v1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Idle", "")
		}, false},
		{"Drifted added", func(nc *v1.NodeClaim) { nc.SetCondition(v1.ConditionTypeDrifted, metav1.ConditionTrue, "Drifted", "") }, false},
		{"Consolidatable cleared", func(nc *v1.NodeClaim) { nc.ClearCondition(v1.ConditionTypeConsolidatable) }, false},
		{"lastPodEventTime", func(nc *v1.NodeClaim) { nc.Status.LastPodEventTime = metav1.Now() }, false},
		{"Registered set", func(nc *v1.NodeClaim) {
			nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
		}, true},
		{"node name", func(nc *v1.NodeClaim) { nc.Status.NodeName = "c" }, true},
		{"a label", func(nc *v1.NodeClaim) { nc.Labels["x"] = "y" }, true},
		{"deleted", func(nc *v1.NodeClaim) { now := metav1.Now(); nc.DeletionTimestamp = &now }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := base.DeepCopy()
			nc.ResourceVersion = "2"
			tc.change(nc)
			q := priorityqueue.New[reconcile.Request]("lifecycle-test")
			defer q.ShutDown()
			claims.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: base, ObjectNew: nc}, q)
			if tc.enqueue {
				waitForLen(t, q, 1)
				return
			}
			// The queue lands adds in order: once a later claim's add has landed, a wrong one would have too.
			claims.Create(ctx, event.TypedCreateEvent[client.Object]{Object: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "later"}}}, q)
			waitForLen(t, q, 1)
			if q.Len() != 1 {
				t.Errorf("an update changing only %s enqueued the claim", tc.name)
			}
		})
	}
}
