package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestAPIServerFaults runs the manager through a proxy that answers 10% of updates and patches with
// 409 Conflict and cuts every watch after 0.5–1.5× watchLife (3 s short, 10 s long): the scale-up converges with no duplicate or leaked
// instance and no stuck claim.
func TestAPIServerFaults(t *testing.T) {
	pods, watchLife := 100, 3*time.Second
	if long() {
		pods, watchLife = 500, 10*time.Second
	}
	ctx := context.Background()
	s := newStack(t)
	proxy := startFaultyAPIServer(t, s.env.Config, 0.1, watchLife)
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
	report(t, fmt.Sprintf("apiserver faults (10%% of updates 409 Conflict, watches cut every %s–%s)", watchLife/2, watchLife*3/2), "| pods | all Running after | conflicts injected | watches cut | claims | instances | empty nodes |\n|---|---|---|---|---|---|---|",
		[]string{fmt.Sprintf("| %d | %s | %d | %d | %d | %d | %d |", pods, took.Round(100*time.Millisecond), proxy.conflicts.Load(), proxy.watchCuts.Load(),
			inv.claims, inv.instances, inv.emptyNodes)})
}
