package disruption

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nomination"
)

// recordingReserver remembers the reservations it was given.
type recordingReserver struct{ got []nomination.Reservation }

func (r *recordingReserver) Reserve(res nomination.Reservation) { r.got = append(r.got, res) }

func (r *recordingReserver) Reserved(string) bool { return false }

func claimWithRecord(t *testing.T, name string, deleting bool, r commandRecord) *v1.NodeClaim {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1.DisruptionCommandAnnotationKey: string(b)}}}
	if deleting {
		nc.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return nc
}

// The reservation of an executed command whose claims still drain is restored once, with the slots
// of all its claims; a command not executed yet (claims not deleting) and one this process executed
// itself are not.
func TestRestoreReservationsOfDrainingCommands(t *testing.T) {
	rec := func(id, node string, pods ...types.UID) commandRecord {
		r := commandRecord{ID: id, Reason: v1.DisruptionReasonUnderutilized, Targets: []string{"a", "b"}, Node: node}
		for _, p := range pods {
			r.Pods = append(r.Pods, p)
			r.Reserved = append(r.Reserved, reservedSlot{Pod: p, Owner: "rs", Claim: "dest"})
		}
		return r
	}
	res := &recordingReserver{}
	c := New(nil, nil, nil, nil, res, nil, clocktesting.NewFakeClock(time.Now()), DefaultOptions())
	c.restored["own"] = true
	cl := &cluster{claims: []*v1.NodeClaim{
		claimWithRecord(t, "a", true, rec("cmd-1", "a", "p1", "p2")),
		claimWithRecord(t, "b", true, rec("cmd-1", "b", "p3")),
		claimWithRecord(t, "c", false, rec("cmd-2", "c", "p4")),
		claimWithRecord(t, "d", true, rec("own", "d", "p5")),
	}}
	c.restoreReservations(context.Background(), cl)
	if len(res.got) != 1 || res.got[0].Command != "cmd-1" || len(res.got[0].Slots) != 3 || len(res.got[0].Drained) != 2 || res.got[0].Replacements != 0 {
		t.Fatalf("restored %+v, want cmd-1 once with its 3 slots over 2 drained claims and no replacement counted", res.got)
	}
	c.restoreReservations(context.Background(), cl)
	if len(res.got) != 1 {
		t.Errorf("restored again on the next pass: %+v", res.got)
	}
	// Once the claims are gone the command is forgotten.
	c.restoreReservations(context.Background(), &cluster{})
	if len(c.restored) != 0 {
		t.Errorf("restored commands kept after their claims went: %v", c.restored)
	}
}

// The loop wakes when a command in flight is due, and every 2 s for a poll interval after a command
// executed while its nodes drain.
func TestNextPass(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(nil, nil, nil, nil, nil, nil, clk, DefaultOptions())
	if got := c.nextPass(); got != c.opts.PollInterval {
		t.Errorf("idle: next pass in %s, want the poll interval", got)
	}
	c.commands = []*command{{started: clk.Now().Add(-2 * time.Second)}}
	if got := c.nextPass(); got != c.opts.ValidationDelay-2*time.Second {
		t.Errorf("command started 2s ago: next pass in %s, want at the end of its validation delay", got)
	}
	c.commands[0].started = clk.Now().Add(-time.Minute)
	if got := c.nextPass(); got != c.opts.PollInterval {
		t.Errorf("command past its delay (waiting for replacements): next pass in %s, want the poll interval", got)
	}
	c.commands = nil
	draining := &cluster{claims: []*v1.NodeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}}
	c.trackDeletions(draining, []string{"a"})
	if got := c.nextPass(); got != drainPoll {
		t.Errorf("draining: next pass in %s, want %s", got, drainPoll)
	}
	clk.Step(c.opts.PollInterval)
	c.trackDeletions(draining, nil)
	if got := c.nextPass(); got != c.opts.PollInterval {
		t.Errorf("draining for a poll interval: next pass in %s, want the poll interval", got)
	}
	c.trackDeletions(&cluster{}, nil)
	if len(c.deleting) != 0 {
		t.Errorf("drained claims still tracked: %v", c.deleting)
	}
}
