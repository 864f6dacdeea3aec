package nodepool

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
)

// recount is the pool's status as counted from every claim: what the tally must always equal.
func recount(claims map[string]*v1.NodeClaim, pool string) (corev1.ResourceList, int64) {
	out := corev1.ResourceList{}
	var nodes int64
	for _, nc := range claims {
		if nc.Labels[v1.NodePoolLabelKey] != pool || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		nodes++
		for name, q := range nc.Status.Capacity {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out, nodes
}

// The pools' sums kept from claim events equal a recount of the claims after every event of a
// random run of creations, launches, resizes, moves between pools, deletions begun and claims gone;
// a resource no claim has any more leaves the sum. The status reconcile reads these sums (count)
// without reading a claim: the recount of every claim per reconcile was 13.3 CPU-s at 50,000 pods.
func TestClaimEventsKeepThePoolSums(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	tl := newTally()
	h := claimEvents(time.Hour, tl)
	rng := rand.New(rand.NewPCG(1, 2))
	pools := []string{"general", "spot"}
	capacities := []corev1.ResourceList{nil,
		{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("3Gi"), "nvidia.com/gpu": resource.MustParse("1")}}
	claims := map[string]*v1.NodeClaim{}
	for step := range 2000 {
		name := fmt.Sprintf("c%d", rng.IntN(40))
		old, exists := claims[name]
		switch {
		case !exists:
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pools[rng.IntN(2)]}}}
			nc.Status.Capacity = capacities[rng.IntN(3)]
			claims[name] = nc
			h.Create(ctx, event.CreateEvent{Object: nc}, q)
		case rng.IntN(6) == 0:
			delete(claims, name)
			h.Delete(ctx, event.DeleteEvent{Object: old}, q)
		default:
			cur := old.DeepCopy()
			switch rng.IntN(4) {
			case 0:
				cur.Labels[v1.NodePoolLabelKey] = pools[rng.IntN(2)]
			case 1:
				cur.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			case 2:
				cur.Status.Capacity = capacities[rng.IntN(3)]
			default:
				cur.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
			}
			claims[name] = cur
			h.Update(ctx, event.UpdateEvent{ObjectOld: old, ObjectNew: cur}, q)
		}
		for _, pool := range pools {
			wantRes, wantNodes := recount(claims, pool)
			gotRes, gotNodes, err := (&Controller{tally: tl}).count(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			if gotNodes != wantNodes || !equality.Semantic.DeepEqual(gotRes, wantRes) {
				t.Fatalf("step %d, pool %s: tally %d claims %v, recount %d claims %v", step, pool, gotNodes, gotRes, wantNodes, wantRes)
			}
		}
	}
}
