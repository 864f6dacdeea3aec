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
	b.Arrive("a")
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, nil)
	if took < time.Second || took > 1200*time.Millisecond {
		t.Errorf("batch closed after %s, want the 1s idle window", took)
	}
}

func TestBatcherMaxWindowBoundsABusyBatch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 3*time.Second)
	b.Arrive("first")
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 200*time.Millisecond, func() {
		n++
		b.Arrive(types.UID(fmt.Sprintf("pod-%d", n)))
	})
	if took < 3*time.Second || took > 3400*time.Millisecond {
		t.Errorf("busy batch closed after %s, want the 3s max window", took)
	}
}

func TestBatcherIgnoresPodsAlreadySeen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	if !b.Arrive("a") {
		t.Fatal("first arrival of a not new")
	}
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, func() {
		if b.Arrive("a") {
			t.Error("a counted as a new arrival twice")
		}
	})
	if took > 1200*time.Millisecond {
		t.Errorf("status updates of a seen pod held the batch open for %s", took)
	}
}

func TestBatcherClosesEarlyWhenArrivalsAreDone(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	done := false
	b.closeWhenArrivalsDone(200*time.Millisecond, func() bool { return done })
	b.Arrive("a")
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 50*time.Millisecond, func() {
		n++
		if n == 4 { // after three steps (150ms) the workloads create their last pod
			b.Arrive("b")
			done = true
		}
	})
	if took < 350*time.Millisecond || took > 400*time.Millisecond {
		t.Errorf("batch closed after %s, want the 200ms settle after the last arrival at 150ms", took)
	}
	if _, by := b.LastBatch(); by != "arrivals done" {
		t.Errorf("closed by %q, want arrivals done", by)
	}
}

func TestBatcherWaitsOutTheIdleWindowWhileArrivalsAreNotDone(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	b.closeWhenArrivalsDone(200*time.Millisecond, func() bool { return false })
	b.Arrive("a")
	took := stepUntilClosed(t, clk, waitAsync(b), 50*time.Millisecond, nil)
	if took < time.Second || took > 1100*time.Millisecond {
		t.Errorf("batch closed after %s, want the 1s idle window", took)
	}
	if _, by := b.LastBatch(); by != "idle" {
		t.Errorf("closed by %q, want idle", by)
	}
}
