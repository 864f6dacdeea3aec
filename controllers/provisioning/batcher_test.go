package provisioning

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
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
	b.Arrive("a", nil, true)
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, nil)
	if took < time.Second || took > 1200*time.Millisecond {
		t.Errorf("batch closed after %s, want the 1s idle window", took)
	}
}

func TestBatcherMaxWindowBoundsABusyBatch(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 3*time.Second)
	b.Arrive("first", nil, true)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 200*time.Millisecond, func() {
		n++
		b.Arrive(types.UID(fmt.Sprintf("pod-%d", n)), nil, true)
	})
	if took < 3*time.Second || took > 3400*time.Millisecond {
		t.Errorf("busy batch closed after %s, want the 3s max window", took)
	}
}

func TestBatcherIgnoresPodsAlreadySeen(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	if !b.Arrive("a", nil, true) {
		t.Fatal("first arrival of a not new")
	}
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, func() {
		if b.Arrive("a", nil, true) {
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
	b.Arrive("a", rs, true)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 50*time.Millisecond, func() {
		n++
		if n == 4 { // after three steps (150ms) the ReplicaSet creates its last pod
			b.Arrive("b", rs, true)
			complete = true
		}
	})
	if took < 350*time.Millisecond || took > 400*time.Millisecond {
		t.Errorf("batch closed after %s, want the 200ms settle after the last arrival at 150ms", took)
	}
	if _, by := b.LastBatch(); by != "scheduler tried all, workloads complete" {
		t.Errorf("closed by %q, want scheduler tried all, workloads complete", by)
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
	b.Arrive("a", rs, true)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, func() {
		n++
		if n == 20 { // 1.9s: far past the idle window, the ReplicaSet's last pods arrive
			b.Arrive("b", rs, true)
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
			b.Arrive("a", rs, true)
			if tc.bare {
				b.Arrive("bare", nil, true)
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

// TestBatcherClosesWhenTheSchedulerHasTriedEveryPod: a complete batch closes the moment the
// kube-scheduler has marked its last pod unschedulable, well inside the idle window; until then it
// is held open (the pod may yet fit on an existing node), and if the scheduler never gets to it, the
// idle window still closes the batch.
func TestBatcherClosesWhenTheSchedulerHasTriedEveryPod(t *testing.T) {
	for _, tc := range []struct {
		name    string
		triedAt int // step at which the scheduler marks pod b; 0: never
		want    time.Duration
		wantBy  string
	}{
		{"closes when the last pod is tried", 6, 300 * time.Millisecond, "scheduler tried all, workloads complete"},
		{"idle bounds the wait for the scheduler", 0, time.Second, "idle, workloads complete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newTimerClock()
			b := newBatcher(clk, time.Second, 10*time.Second)
			b.closeWhenComplete(100*time.Millisecond, func([]workload) bool { return true })
			b.Arrive("a", rs, true)
			b.Arrive("b", rs, false)
			n := 0
			took := stepUntilClosed(t, clk.FakeClock, waitAsync(b), 50*time.Millisecond, func() {
				n++
				if n == tc.triedAt {
					clk.afterLook(t, b, func() {
						if b.Arrive("b", rs, true) {
							t.Error("b's being tried counted as a new arrival")
						}
					})
				}
			})
			if took < tc.want || took > tc.want+50*time.Millisecond {
				t.Errorf("batch closed after %s, want %s", took, tc.want)
			}
			if _, by := b.LastBatch(); by != tc.wantBy {
				t.Errorf("closed by %q, want %q", by, tc.wantBy)
			}
		})
	}
}

// TestBatcherDoesNotWaitForAPodBoundMeanwhile: a pod the scheduler bound (or that was deleted)
// before it was marked unschedulable holds no batch.
func TestBatcherDoesNotWaitForAPodBoundMeanwhile(t *testing.T) {
	clk := newTimerClock()
	b := newBatcher(clk, time.Second, 10*time.Second)
	b.closeWhenComplete(100*time.Millisecond, func([]workload) bool { return true })
	b.Arrive("a", rs, true)
	b.Arrive("b", rs, false)
	n := 0
	took := stepUntilClosed(t, clk.FakeClock, waitAsync(b), 50*time.Millisecond, func() {
		if n++; n == 4 {
			clk.afterLook(t, b, func() { b.Forget("b") })
		}
	})
	if took > 250*time.Millisecond {
		t.Errorf("batch closed after %s, want right after b was bound at 150ms", took)
	}
}

// timerClock is a fake clock that counts the timers asked of it. Wait answers every kick with a new
// look, which ends in a new timer or a closed batch; the clock's waiters alone do not show whether
// Wait has reacted to a kick yet (its old timer is still waiting).
type timerClock struct {
	*clocktesting.FakeClock
	timers atomic.Int64
}

func newTimerClock() *timerClock {
	return &timerClock{FakeClock: clocktesting.NewFakeClock(time.Unix(0, 0))}
}

func (c *timerClock) NewTimer(d time.Duration) clock.Timer {
	c.timers.Add(1)
	return c.FakeClock.NewTimer(d)
}

// afterLook runs kick (which kicks Wait, blocked on its timer) and returns once Wait has looked
// again, before the test steps the clock on.
func (c *timerClock) afterLook(t *testing.T, b *batcher, kick func()) {
	t.Helper()
	before := c.timers.Load()
	kick()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, closedBy := b.LastBatch()
		return c.timers.Load() > before || closedBy != "", nil
	})
	if err != nil {
		t.Fatal("Wait did not look again after the kick")
	}
}

// TestBatcherIdleDoesNotCloseABatchWhoseWorkloadsCreatePods: the scheduler lagging behind (pods not
// tried yet) and the idle window passing do not close a batch while its workloads are still
// creating pods (a loaded controller-manager pausing over a second): the burst stays one batch.
func TestBatcherIdleDoesNotCloseABatchWhoseWorkloadsCreatePods(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBatcher(clk, time.Second, 10*time.Second)
	complete := false
	b.closeWhenComplete(100*time.Millisecond, func([]workload) bool { return complete })
	b.Arrive("a", rs, false)
	n := 0
	took := stepUntilClosed(t, clk, waitAsync(b), 100*time.Millisecond, func() {
		if n++; n == 25 { // 2.4s: the ReplicaSet's last pod, still untried
			b.Arrive("b", rs, false)
			complete = true
		}
	})
	if took < 3400*time.Millisecond || took > 3500*time.Millisecond {
		t.Errorf("batch closed after %s, want it held until the idle window after the last pod at 2.4s", took)
	}
	if _, by := b.LastBatch(); by != "idle, workloads complete" {
		t.Errorf("closed by %q, want idle, workloads complete", by)
	}
}
