package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// Three drifted nodes with room for each other's pods. A pool whose budget allows two nodes runs
// two drift commands at once (one more per pass), not one at a time; the third waits for the budget.
func TestSeveralCommandsInFlightPerPoolWithinBudget(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := resimPool("Never", "2")
	create(t, kube, np)
	for i := range 3 {
		name := fmt.Sprintf("node-%d", i)
		resimNode(t, kube, np, name)
		resimPod(t, kube, name+"-app", name, "500m")
		nc := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		stored := nc.DeepCopy()
		nc.Annotations[v1.NodePoolHashAnnotationKey] = "an-older-template"
		if err := kube.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			t.Fatal(err)
		}
	}
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Minute))
	c := New(kube, kube, noDrift{}, listSnapshot{kube}, nil, events.NewFakeRecorder(100), clk, DefaultOptions())
	for pass := range 3 {
		if err := c.Reconcile(ctx); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		clk.Step(time.Second) // within the validation delay: no command executes
	}
	if len(c.commands) != 2 {
		t.Fatalf("want 2 drift commands in flight (the budget), got %d", len(c.commands))
	}
	for _, cmd := range c.commands {
		if cmd.reason != v1.DisruptionReasonDrifted {
			t.Errorf("command %s, want Drifted", cmd.reason)
		}
	}
	disrupting := 0
	claims := &v1.NodeClaimList{}
	if err := kube.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		if nc.IsTrue(v1.ConditionTypeDisrupting) {
			disrupting++
		}
	}
	if disrupting != 2 {
		t.Errorf("%d claims marked Disrupting, want 2", disrupting)
	}
}
