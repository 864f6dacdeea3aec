package termination

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joist-dev/joist/test/env"
)

// slowEvictions makes every eviction take roundTrip, as on a busy apiserver, and records how many
// were in flight at once.
type slowEvictions struct {
	client.Client
	roundTrip      time.Duration
	inFlight, most atomic.Int32
}

func (c *slowEvictions) SubResource(name string) client.SubResourceClient {
	return slowSubResource{SubResourceClient: c.Client.SubResource(name), c: c, eviction: name == "eviction"}
}

type slowSubResource struct {
	client.SubResourceClient
	c        *slowEvictions
	eviction bool
}

func (s slowSubResource) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	if s.eviction {
		n := s.c.inFlight.Add(1)
		defer s.c.inFlight.Add(-1)
		for m := s.c.most.Load(); n > m && !s.c.most.CompareAndSwap(m, n); m = s.c.most.Load() {
		}
		time.Sleep(s.c.roundTrip)
	}
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

// A drain evicts a node's pods concurrently (session 18's bench logs: one eviction every ~100 ms,
// one after the other, 2–4 s of a consolidation command's 10 s), and the apiserver still holds each
// eviction to the PodDisruptionBudget: of 8 pods under a budget allowing 1 disruption, 1 is
// evicted and the others are refused (429) in the same drain; of 8 pods under no budget, all 8
// go in one drain with more than one eviction in flight. Evicting one after the other, the second
// check fails (1 in flight at most).
func TestDrainEvictsConcurrentlyWithinTheBudget(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	slow := &slowEvictions{Client: e.Client, roundTrip: 200 * time.Millisecond}
	kube := byProviderID{slow}
	nodeA, _ := deletingNode(t, kube, "node-a", nil)
	nodeB, _ := deletingNode(t, kube, "node-b", nil)
	var budgeted, free []*corev1.Pod
	for i := range 8 {
		p := runningPod(fmt.Sprintf("budgeted-%d", i), "node-a", 30, nil)
		p.Labels = map[string]string{"app": "budgeted"}
		mustCreate(t, kube, p)
		// Running and Ready: the apiserver lets a Pending pod, or an unready one while the budget is
		// healthy, go whatever the budget.
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if err := kube.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		budgeted = append(budgeted, p)
		q := runningPod(fmt.Sprintf("free-%d", i), "node-b", 30, nil)
		mustCreate(t, kube, q)
		free = append(free, q)
	}
	// The budget's status as kube-controller-manager's disruption controller would write it (envtest
	// runs none): 8 healthy, 7 desired, 1 disruption allowed.
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "budgeted", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptrIntOrString(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "budgeted"}}}}
	mustCreate(t, kube, pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1, CurrentHealthy: 8, DesiredHealthy: 7, ExpectedPods: 8}
	if err := kube.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}

	c := New(kube, &recordingCloud{}, events.NewFakeRecorder(100), clocktesting.NewFakeClock(time.Now()), DefaultOptions())
	evicted := func(pods []*corev1.Pod) int {
		t.Helper()
		n := 0
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				t.Fatal(err)
			}
			if !got.DeletionTimestamp.IsZero() {
				n++
			}
		}
		return n
	}

	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nodeA)}); err != nil {
		t.Fatal(err)
	}
	if n := evicted(budgeted); n != 1 {
		t.Errorf("%d of the 8 pods under a budget allowing 1 disruption evicted, want 1", n)
	}
	slow.most.Store(0)
	start := time.Now()
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nodeB)}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if n := evicted(free); n != 8 {
		t.Errorf("%d of the 8 pods under no budget evicted in one drain, want 8", n)
	}
	if most := slow.most.Load(); most < 2 {
		t.Errorf("at most %d eviction(s) in flight at once (%s for 8 evictions of %s each), want them concurrent", most, took.Round(time.Millisecond), slow.roundTrip)
	}
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }
