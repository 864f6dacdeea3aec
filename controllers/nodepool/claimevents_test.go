package nodepool

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
)

func claim(pool string) *v1.NodeClaim {
	return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{v1.NodePoolLabelKey: pool}}}
}

// Only the updates that change what the pool's status counts recount it.
func TestClaimCountChanged(t *testing.T) {
	launched := claim("general")
	launched.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	for name, tc := range map[string]struct {
		edit func(*v1.NodeClaim)
		want bool
	}{
		"condition": {func(nc *v1.NodeClaim) {
			nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
		}, false},
		"node name":    {func(nc *v1.NodeClaim) { nc.Status.NodeName = "n" }, false},
		"capacity":     {func(nc *v1.NodeClaim) { nc.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4") }, true},
		"new capacity": {func(nc *v1.NodeClaim) { nc.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("1Gi") }, true},
		"deleting":     {func(nc *v1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
		"other pool":   {func(nc *v1.NodeClaim) { nc.Labels[v1.NodePoolLabelKey] = "spot" }, true},
	} {
		cur := launched.DeepCopy()
		tc.edit(cur)
		if got := ClaimCountChanged(launched, cur); got != tc.want {
			t.Errorf("%s: ClaimCountChanged = %t, want %t", name, got, tc.want)
		}
	}
}

// A burst of claim events of one pool is one reconcile, after the wait; condition-only updates
// enqueue nothing; a claim moving between pools recounts both.
func TestClaimEventsCoalesce(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h := claimEvents(50*time.Millisecond, newTally())
	for range 100 {
		h.Create(ctx, event.CreateEvent{Object: claim("general")}, q)
	}
	ready := claim("general")
	ready.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
	h.Update(ctx, event.UpdateEvent{ObjectOld: claim("other"), ObjectNew: ready}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: claim("quiet"), ObjectNew: func() *v1.NodeClaim {
		nc := claim("quiet")
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
		return nc
	}()}, q)
	if q.Len() != 0 {
		t.Fatalf("%d pools enqueued at once, want them to wait", q.Len())
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() == 2, nil
	}); err != nil {
		t.Fatalf("%d pools enqueued after the wait, want general and other", q.Len())
	}
	got := map[string]bool{}
	for range 2 {
		req, _ := q.Get()
		got[req.Name] = true
		q.Done(req)
	}
	if !got["general"] || !got["other"] || q.Len() != 0 {
		t.Errorf("enqueued %v and %d more, want general and other once each (not quiet)", got, q.Len())
	}
}
