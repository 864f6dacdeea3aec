package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestAPIServerFaults runs the manager through a proxy that answers 10% of updates and patches with
// 409 Conflict and cuts every watch after 5–15 s: the scale-up converges with no duplicate or leaked
// instance and no stuck claim.
func TestAPIServerFaults(t *testing.T) {
	pods := 100
	if long() {
		pods = 500
	}
	ctx := context.Background()
	s := newStack(t)
	proxy := startFaultyAPIServer(t, s.env.Config, 0.1, 10*time.Second)
	s.kubeconfig = proxy.kubeconfig(t)
	s.setUp(ctx, time.Second)
	s.start()
	for _, d := range deployments(pods) {
		if err := s.kube.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	took := s.waitRunning(ctx, pods, 10*time.Minute)
	inv, err := s.settle(ctx, 3*time.Minute)
	if err != nil {
		t.Fatalf("through the faulty apiserver: %v", err)
	}
	if proxy.conflicts.Load() == 0 || proxy.watchCuts.Load() == 0 {
		t.Errorf("faults not exercised: %d conflicts, %d watch cuts", proxy.conflicts.Load(), proxy.watchCuts.Load())
	}
	report(t, "apiserver faults (10% of updates 409 Conflict, watches cut every 5–15 s)", "| pods | all Running after | conflicts injected | watches cut | claims | instances | empty nodes |\n|---|---|---|---|---|---|---|",
		[]string{fmt.Sprintf("| %d | %s | %d | %d | %d | %d | %d |", pods, took.Round(100*time.Millisecond), proxy.conflicts.Load(), proxy.watchCuts.Load(),
			inv.claims, inv.instances, inv.emptyNodes)})
}
