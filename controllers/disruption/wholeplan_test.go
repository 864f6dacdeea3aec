package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/test/env"
)

// Three nodes whose pods fit on one: the whole plan removes two, the budget lets one go at a time.
// The first command takes one of the two, and moves its pod onto the node the whole plan keeps —
// not onto the other one, which the next command would then evict it from again. That other node
// carries the planned-removal taint, so the kube-scheduler keeps the re-created pod off it too.
// Without the whole plan the slice moved node-a's pod onto node-b, the next command's node.
func TestCommandMovesPodsOnlyOntoNodesTheWholePlanKeeps(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := resimPool("0s", "1")
	create(t, kube, np)
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		resimNode(t, kube, np, n)
	}
	resimPod(t, kube, "a-1", "node-a", "1000m")
	resimPod(t, kube, "b-1", "node-b", "1200m")
	resimPod(t, kube, "c-1", "node-c", "1500m")
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Minute))
	c := New(kube, kube, noDrift{}, listSnapshot{kube}, nil, events.NewFakeRecorder(100), clk, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.commands) != 1 || len(c.commands[0].targets) != 1 {
		t.Fatalf("want one command of one node, got %d commands", len(c.commands))
	}
	cmd := c.commands[0]
	taken := cmd.targets[0].node
	marked := map[string]bool{}
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		node := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
			t.Fatal(err)
		}
		if n != taken && disruptionpolicy.HasTaint(node, disruptionpolicy.PlannedRemovalTaint) {
			marked[n] = true
		}
	}
	if len(marked) != 1 {
		t.Fatalf("planned-removal taint on %v, want it on exactly the one node the whole plan removes after %s", marked, taken)
	}
	if len(cmd.destinations) == 0 {
		t.Fatalf("command on %s moves no pod onto a node that stays", taken)
	}
	for dest := range cmd.destinations {
		if marked[dest] {
			t.Errorf("command on %s moves pods onto %s, which the whole plan removes next (destinations %v)", taken, dest, cmd.destinations)
		}
	}
}
