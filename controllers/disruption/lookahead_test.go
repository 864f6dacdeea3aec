package disruption

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// Three nodes whose pods fit on one: the look-ahead removes two, the budget lets one go at a time.
// The first command takes one of the two, and moves its pod onto the node the look-ahead keeps —
// not onto the other one, which the next command would then evict it from again. That other node
// carries the planned-removal taint, so the kube-scheduler keeps the re-created pod off it too.
// Without the look-ahead the command moved node-a's pod onto node-b, the next command's node.
func TestCommandMovesPodsOnlyOntoNodesTheWholePlanKeeps(t *testing.T) {
	checkSliceOfWholePlan(t, resimPool("0s", "1"), 1, 0, "1000m", "1200m", "1500m")
}

// The same with a pool that may launch a cheaper type all three nodes' pods fit on: the cheapest
// unbudgeted plan replaces every node by one new node and keeps none. The marks come from the
// budgeted commands that follow each other — node-a and node-c deleted onto node-b, then node-b
// replaced by one c-2x — not from that plan, which marked every node (seen failing, session 10).
// Node-b received the deletes' pods, so its replace runs first (reorderedCommand): the command
// replaces node-b by one node, with room for the other two's pods; both others are marked, and
// the command's pod goes onto its replacement. Before the reorder the command deleted node-a onto
// node-b, and node-b was replaced later with both moved pods on it.
func TestWholePlanMarksOnlyWhatTheKeptNodesAbsorb(t *testing.T) {
	np := resimPool("0s", "1")
	np.Spec.Template.Spec.Requirements[0].Values = []string{resimType, "c-2x-amd64-linux"}
	checkSliceOfWholePlan(t, np, 2, 1, "300m", "400m", "500m")
}

// checkSliceOfWholePlan runs one pass on three resimType nodes of np with one pod each (of cpu) and
// checks that the command takes one node and launches replacements replacements, wantMarked of the
// others are marked, and the command's pods move only onto unmarked nodes.
func checkSliceOfWholePlan(t *testing.T, np *v1.NodePool, wantMarked, replacements int, cpu ...string) {
	t.Helper()
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	create(t, kube, np)
	for i, n := range []string{"node-a", "node-b", "node-c"} {
		resimNode(t, kube, np, n)
		resimPod(t, kube, n+"-1", n, cpu[i])
	}
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
		if n != taken && hardMarked(t, kube, n) {
			marked[n] = true
		}
	}
	if len(marked) != wantMarked {
		t.Fatalf("planned-removal taint on %v, want it on the %d node(s) the look-ahead removes after %s", marked, wantMarked, taken)
	}
	if len(cmd.plans) != replacements {
		t.Fatalf("command on %s launches %d node(s), want %d (%s)", taken, len(cmd.plans), replacements, cmd.message)
	}
	if len(cmd.destinations) == 0 && replacements == 0 {
		t.Fatalf("command on %s moves no pod onto a node that stays", taken)
	}
	for dest := range cmd.destinations {
		if marked[dest] {
			t.Errorf("command on %s moves pods onto %s, which the look-ahead removes next (destinations %v)", taken, dest, cmd.destinations)
		}
	}
}
