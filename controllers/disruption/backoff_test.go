package disruption

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// A command abandoned by its re-simulation leaves its nodes out of new commands for resimBackoff:
// the same plan would otherwise be formed again at once and fail the same way, launching and
// deleting its replacements each time (seen in the scale-down bench: five times in 35 s).
func TestAbandonedCommandBacksOff(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := &Controller{clock: clk, backoff: map[string]time.Time{}}
	c.backOff(&command{targets: []target{{claim: "a", node: "node-a"}}}, clk.Now())
	if !c.backedOff("node-a", clk.Now().Add(resimBackoff-time.Second)) {
		t.Error("node-a is a candidate again within the back-off")
	}
	if c.backedOff("node-b", clk.Now()) {
		t.Error("node-b backed off without an abandoned command")
	}
	if c.backedOff("node-a", clk.Now().Add(resimBackoff)) || len(c.backoff) != 0 {
		t.Errorf("node-a still left out after the back-off (%d remembered)", len(c.backoff))
	}
}
