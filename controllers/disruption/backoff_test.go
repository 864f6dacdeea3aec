package disruption

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
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

// The destinations of this process's executing command are held while its node drains and
// destinationGrace after, not for the reservation's whole life (NominationTTL after the node is gone,
// which delayed the next command by half a minute in the scale-down bench); a reservation whose
// command this process does not know (restored after a restart) holds its nodes while it lasts.
func TestReservedDestinationsHeldWhileTheDrainLasts(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	withNode := func(name string) *v1.NodeClaim {
		nc := claimAt(name, "1")
		nc.Status.NodeName = "node-" + name
		return nc
	}
	c := &Controller{clock: clk, reservations: reservedOn{"dest": true, "restored-dest": true},
		ownReserved: map[string]*ownReservation{"cmd": {drained: []string{"drained"}, dests: map[string]bool{"dest": true}}}}
	draining := &cluster{claims: []*v1.NodeClaim{withNode("drained"), withNode("dest"), withNode("restored-dest"), withNode("other")}}
	gone := &cluster{claims: []*v1.NodeClaim{withNode("dest"), withNode("restored-dest"), withNode("other")}}
	if h := c.heldNodes(draining); !h["node-dest"] || !h["node-restored-dest"] || h["node-other"] {
		t.Fatalf("while draining held %v, want node-dest and node-restored-dest", h)
	}
	if h := c.heldNodes(gone); !h["node-dest"] {
		t.Fatalf("right after the drain held %v, want node-dest (grace)", h)
	}
	clk.Step(destinationGrace)
	if h := c.heldNodes(gone); h["node-dest"] || !h["node-restored-dest"] {
		t.Fatalf("after the grace held %v, want only node-restored-dest", h)
	}
}
