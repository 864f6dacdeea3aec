package reliability

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCrashConsistency SIGKILLs the manager process at a random moment of a scale-up and starts a
// new one: every pod must end up Running, with no instance launched twice for a claim, none leaked
// (each has a NodeClaim once the garbage collector's grace has passed) and no claim stuck.
// Short: 2 trials of 100 pods; RELIABILITY_LONG: 20 trials of 500 pods.
func TestCrashConsistency(t *testing.T) {
	trials, pods := 2, 100
	if long() {
		trials, pods = 20, 500
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	var rows []string
	for trial := 0; trial < trials; trial++ {
		killAfter := time.Duration(300+r.Intn(5700)) * time.Millisecond
		ok := t.Run(fmt.Sprintf("trial-%02d", trial), func(t *testing.T) {
			rows = append(rows, crashTrial(t, pods, killAfter))
		})
		if !ok {
			rows = append(rows, fmt.Sprintf("| %d | %s | FAILED | | | |", trial, killAfter.Round(10*time.Millisecond)))
		}
	}
	report(t, "crash consistency", "| trial | killed after | all Running after | claims | instances | empty nodes |\n|---|---|---|---|---|---|", rows)
}

func crashTrial(t *testing.T, pods int, killAfter time.Duration) string {
	ctx := context.Background()
	s := newStack(t)
	s.setUp(ctx, 2*time.Second)
	s.start()
	start := time.Now()
	for _, d := range deployments(pods) {
		if err := s.kube.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(killAfter)
	s.kill()
	before, _ := s.inventory(ctx)
	s.start()
	s.waitRunning(ctx, pods, 10*time.Minute)
	running := time.Since(start)
	inv, err := s.settle(ctx, 3*time.Minute)
	if err != nil {
		t.Fatalf("after the crash (state at the kill: %s): %v", before, err)
	}
	t.Logf("killed after %s (%s at the kill); all %d Running after %s; %s", killAfter, before, pods, running.Round(time.Second), inv)
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %d |", strings.TrimPrefix(t.Name(), "TestCrashConsistency/"),
		killAfter.Round(10*time.Millisecond), running.Round(100*time.Millisecond), inv.claims, inv.instances, inv.emptyNodes)
}

// report logs a markdown table and appends it to $RELIABILITY_REPORT when set (make test-reliability).
func report(t *testing.T, title, header string, rows []string) {
	table := fmt.Sprintf("### %s\n\n%s\n%s\n", title, header, strings.Join(rows, "\n"))
	t.Log("\n" + table)
	if path := os.Getenv("RELIABILITY_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("writing report: %v", err)
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s\n", table)
	}
}
