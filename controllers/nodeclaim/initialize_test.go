package nodeclaim_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// A registered claim whose node turns Ready but is not released yet is not written again: the
// lifecycle's workers block on every write, and the message that changed between "not Ready" and
// "not released" cost each claim one more status patch. Once released, the claim initializes.
func TestNodeTurningReadyBeforeReleaseWritesNoStatus(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc12", Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}}
	nc.Status.ProviderID, nc.Status.NodeName = "kwok://default-abc12", "default-abc12"
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: map[string]string{v1.NodePoolLabelKey: "default", v1.NodeRegisteredLabelKey: "true"},
			Finalizers: []string{v1.TerminationFinalizer}},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}},
	}
	kube := newClient(nc, node)
	c := nodeclaim.New(kube, fakeCloud{}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(now), nodeclaim.DefaultOptions())
	reconcileClaim := func() *v1.NodeClaim {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatal(err)
		}
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	notReady := reconcileClaim()
	if cond := notReady.GetCondition(v1.ConditionTypeInitialized); cond == nil || cond.Status != metav1.ConditionUnknown {
		t.Fatalf("Initialized = %+v with the node not Ready, want Unknown", cond)
	}

	setNode := func(mutate func(*corev1.Node)) {
		t.Helper()
		n := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: node.Name}, n); err != nil {
			t.Fatal(err)
		}
		mutate(n)
		if err := kube.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		mutate(n) // the spec update returned the stored status
		if err := kube.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	setNode(func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	})
	readyNotReleased := reconcileClaim()
	if readyNotReleased.ResourceVersion != notReady.ResourceVersion {
		t.Errorf("claim written again when its node turned Ready before release (Initialized %+v)",
			readyNotReleased.GetCondition(v1.ConditionTypeInitialized))
	}

	setNode(func(n *corev1.Node) { n.Spec.Taints = nil })
	released := reconcileClaim()
	if !released.IsTrue(v1.ConditionTypeInitialized) {
		t.Errorf("Initialized = %+v once released, want True", released.GetCondition(v1.ConditionTypeInitialized))
	}
}
