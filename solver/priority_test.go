package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/solver"
)

func priority(p int32) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { pod.Spec.Priority = &p }
}

// When a pool's limits leave room for only some pods, the higher-priority pods are placed, though
// the lower-priority ones are larger (and so come first in the size-ordered packing).
func TestLimitsPlaceHigherPriorityFirst(t *testing.T) {
	ps := append(pods(2, "batch", "1800m", "1Gi", priority(0)), pods(2, "critical", "1500m", "1Gi", priority(1000))...)
	in := defaultInput(ps...)
	in.NodePools[0].Remaining = rl("cpu", "4")
	r := solve(t, in)
	for _, name := range []string{"critical-0", "critical-1"} {
		if nodeOf(r, name) == nil {
			t.Fatalf("%s (priority 1000) should be placed\n%s", name, summary(r))
		}
	}
	if len(r.Unschedulable) != 2 {
		t.Fatalf("want the two batch pods left out\n%s", summary(r))
	}
	for _, u := range r.Unschedulable {
		if u.Cause != solver.CauseLimits || u.Pod.Name[:5] != "batch" {
			t.Fatalf("%s left out for %s, want the batch pods for Limits", u.Pod.Name, u.Cause)
		}
	}
	// With room for all, priorities do not change the plan's cost.
	in.NodePools[0].Remaining = nil
	r = solve(t, in)
	mustPlaceAll(t, r)
	same := defaultInput(append(pods(2, "batch", "1800m", "1Gi"), pods(2, "critical", "1500m", "1Gi")...)...)
	if want := solve(t, same).CostPerHour; r.CostPerHour != want {
		t.Fatalf("cost %.4f with priorities, %.4f without", r.CostPerHour, want)
	}
}

// On existing nodes alone (no NodePool), the room goes to the higher-priority pods first.
func TestExistingRoomGoesToHigherPriority(t *testing.T) {
	ps := append(pods(1, "batch", "3", "1Gi", priority(-10)), pods(2, "critical", "2", "1Gi", priority(100))...)
	in := solver.Input{Pods: ps, Nodes: []solver.ExistingNode{existingNode("node-1", "zone-a", "4", "16Gi")}}
	r := solve(t, in)
	for _, name := range []string{"critical-0", "critical-1"} {
		if existingOf(r, name) != "node-1" {
			t.Fatalf("%s should take node-1\n%s", name, summary(r))
		}
	}
	if existingOf(r, "batch-0") != "" {
		t.Fatalf("batch-0 should be left out\n%s", summary(r))
	}
}
