package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// waitAsync runs b.Wait in the background and reports when it returns.
func waitAsync(b *batcher) <-chan bool {
	done := make(chan bool, 1)
	go func() { done <- b.Wait(context.Background()) }()
	return done
}

// stepUntilClosed advances the fake clock in small steps until the batch closes, returning the time
// it took on the fake clock.
func stepUntilClosed(t *testing.T, clk *clocktesting.FakeClock, done <-chan bool, step time.Duration, onStep func()) time.Duration {
	t.Helper()
	start := clk.Now()
	for i := 0; i < 1000; i++ {
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("Wait returned false")
			}
			return clk.Since(start)
		default:
		}
		for !clk.HasWaiters() {
			select {
			case ok := <-done:
				if !ok {
					t.Fatal("Wait returned false")
				}
				return clk.Since(start)
			case <-time.After(time.Millisecond):
			}
		}
		if onStep != nil {
			onStep()
		}
		clk.Step(step)
	}
	t.Fatal("batch never closed")
	return 0
}

func TestBatcherClosesWhenArrivalsStop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	b.Arrive("a", nil)
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, nil)
	if took < time.Second || took > 1200*time.Millisecond {
		t.Errorf("batch closed after %s, want the 1s idle window", took)
	}
}

func TestBatcherMaxWindowBoundsABusyBatch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 3*time.Second)
	b.Arrive("first", nil)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 200*time.Millisecond, func() {
		n++
		b.Arrive(types.UID(fmt.Sprintf("pod-%d", n)), nil)
	})
	if took < 3*time.Second || took > 3400*time.Millisecond {
		t.Errorf("busy batch closed after %s, want the 3s max window", took)
	}
}

func TestBatcherIgnoresPodsAlreadySeen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	if !b.Arrive("a", nil) {
		t.Fatal("first arrival of a not new")
	}
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, func() {
		if b.Arrive("a", nil) {
			t.Error("a counted as a new arrival twice")
		}
	})
	if took > 1200*time.Millisecond {
		t.Errorf("status updates of a seen pod held the batch open for %s", took)
	}
}

var rs = &workload{Kind: "ReplicaSet", Namespace: "default", Name: "web-1", UID: "rs-uid"}

func TestBatcherClosesOnceItsWorkloadsAreComplete(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	complete := false
	var asked []workload
	b.closeWhenComplete(200*time.Millisecond, func(ws []workload) bool { asked = ws; return complete })
	b.Arrive("a", rs)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 50*time.Millisecond, func() {
		n++
		if n == 4 { // after three steps (150ms) the ReplicaSet creates its last pod
			b.Arrive("b", rs)
			complete = true
		}
	})
	if took < 350*time.Millisecond || took > 400*time.Millisecond {
		t.Errorf("batch closed after %s, want the 200ms settle after the last arrival at 150ms", took)
	}
	if _, by := b.LastBatch(); by != "workloads complete" {
		t.Errorf("closed by %q, want workloads complete", by)
	}
	if len(asked) != 1 || asked[0] != *rs {
		t.Errorf("asked about %v, want the batch's ReplicaSet", asked)
	}
}

func TestBatcherHoldsABatchWhileItsWorkloadsCreatePods(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 3*time.Second)
	complete := false
	b.closeWhenComplete(200*time.Millisecond, func([]workload) bool { return complete })
	b.Arrive("a", rs)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, func() {
		n++
		if n == 20 { // 1.9s: far past the idle window, the ReplicaSet's last pods arrive
			b.Arrive("b", rs)
			complete = true
		}
	})
	if took < 2100*time.Millisecond || took > 2200*time.Millisecond {
		t.Errorf("batch closed after %s, want it held past the idle window until 200ms after the workload completed at 1.9s", took)
	}
}

func TestBatcherFallbackWindows(t *testing.T) {
	for _, tc := range []struct {
		name     string
		complete bool
		bare     bool
		wantMin  time.Duration
		wantBy   string
	}{
		{"pods of no workload wait out the idle window", true, true, time.Second, "idle"},
		{"an incomplete workload is held until the max window", false, false, 3 * time.Second, "max duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(0, 0))
			b := newBatcher(clk, time.Second, 3*time.Second)
			b.closeWhenComplete(200*time.Millisecond, func([]workload) bool { return tc.complete })
			b.Arrive("a", rs)
			if tc.bare {
				b.Arrive("bare", nil)
			}
			took := stepUntilClosed(t, clk, waitAsync(b), 50*time.Millisecond, nil)
			if took < tc.wantMin || took > tc.wantMin+100*time.Millisecond {
				t.Errorf("batch closed after %s, want %s", took, tc.wantMin)
			}
			if _, by := b.LastBatch(); by != tc.wantBy {
				t.Errorf("closed by %q, want %q", by, tc.wantBy)
			}
		})
	}
}
