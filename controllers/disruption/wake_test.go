package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
)

// Once a claim a command of this process deleted is gone, its budget is free and the next pass
// starts at once; any other deletion (a pod, another claim) wakes the loop no sooner than drainPoll
// after the last pass started. Before, every deletion waited for drainPoll: 1.6–1.9 s between a
// node gone and the next command in session 18's bench logs, of the 10 s per command the time
// target allows.
func TestAGoneCommandClaimStartsTheNextPassAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(nil, nil, nil, nil, nil, nil, clk, DefaultOptions())
	c.trackDeletions(&cluster{claims: []*v1.NodeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}, []string{"a"})
	// atOnce reports whether the pass after the deletion came without the clock moving, given
	// patience of real time for the waiting goroutine to see it: short where a pass is expected
	// not to come (a slow machine only makes that check weaker), long where one is expected (a
	// slow machine must not fail it).
	atOnce := func(deleted any, patience time.Duration) bool {
		t.Helper()
		done := make(chan bool, 1)
		go func() { done <- c.waitForPass(context.Background(), clk.Now()) }()
		c.deleted(deleted)
		select {
		case <-done:
			return true
		case <-time.After(patience):
		}
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(drainPoll)
		<-done
		return false
	}
	if atOnce(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, 300*time.Millisecond) {
		t.Error("a pod's deletion started a pass before drainPoll")
	}
	if atOnce(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, 300*time.Millisecond) {
		t.Error("the deletion of a claim no command of this process deleted started a pass before drainPoll")
	}
	if !atOnce(toolscache.DeletedFinalStateUnknown{Key: "a", Obj: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, 10*time.Second) {
		t.Error("the command's claim gone: the next pass waited for drainPoll")
	}
}
