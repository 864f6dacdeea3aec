package state

import (
	"testing"
	"time"
)

func TestReservationLifecycle(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Reserve("cmd-1", []string{"claim-a"}, []Slot{{Pod: "old-1", Owner: "rs", Claim: "claim-b"}, {Pod: "old-2", Owner: "rs", Claim: "claim-c"}}, now)
	if c, ok := n.HeldClaim("old-1"); !ok || c != "claim-b" {
		t.Fatalf("HeldClaim(old-1) = %q, %v; want claim-b while it drains", c, ok)
	}
	if !n.IsReserved("claim-b") || !n.IsReleased("claim-b") || !n.HasReservationFor("rs") || n.HasReservationFor("other") {
		t.Fatal("reservation not in force on its destinations")
	}
	n.ForgetPod("old-2") // evicted first
	if _, ok := n.HeldClaim("old-2"); ok {
		t.Fatal("a deleted drained pod still holds its slot")
	}
	if _, ok := n.TakeReservation("new-x", "other"); ok {
		t.Fatal("a pod of another workload took the reservation")
	}
	if c, ok := n.TakeReservation("new-1", "rs"); !ok || c != "claim-c" {
		t.Fatalf("TakeReservation = %q, %v; want the slot whose pod is gone (claim-c)", c, ok)
	}
	if c, _ := n.ClaimOf("new-1"); c != "claim-c" {
		t.Fatalf("re-created pod nominated to %q", c)
	}
	if _, ok := n.TakeReservation("new-1", "rs"); ok {
		t.Fatal("a nominated pod takes a second slot")
	}
	if c, ok := n.TakeReservation("new-2", "rs"); !ok || c != "claim-b" {
		t.Fatalf("second re-created pod: %q, %v; want claim-b", c, ok)
	}
	if _, ok := n.HeldClaim("old-1"); ok {
		t.Fatal("the drained pod still counts after its re-creation took its slot")
	}
	if _, ok := n.TakeReservation("new-3", "rs"); ok {
		t.Fatal("more pods took the reservation than it has slots")
	}
	// Stale-claim sweeps spare reserved claims.
	n.Sweep(now, time.Second, []string{"claim-b"})
	if _, ok := n.ClaimOf("new-2"); !ok {
		t.Fatal("a sweep dropped a nomination a reservation holds")
	}
	exists := func(c string) bool { return false }
	if ended := n.EndReservations(now, 30*time.Second, exists); len(ended) != 0 {
		t.Fatal("a reservation ended the moment its claims went; it lasts the TTL")
	}
	ended := n.EndReservations(now.Add(30*time.Second), 30*time.Second, exists)
	if len(ended) != 1 || ended[0].Slots != 2 || ended[0].Taken != 2 {
		t.Fatalf("ended = %+v, want one reservation with 2 of 2 slots taken", ended)
	}
	if n.IsReserved("claim-b") {
		t.Fatal("claim still reserved after its reservation ended")
	}
	// A later command drains new-2 again: a second eviction of a pod already moved once.
	if again := n.Reserve("cmd-2", []string{"claim-b"}, []Slot{{Pod: "new-2", Owner: "rs", Claim: "claim-d"}, {Pod: "old-9", Owner: "rs", Claim: "claim-d"}}, now); again != 1 {
		t.Fatalf("Reserve reported %d pods moved before, want 1 (new-2)", again)
	}
}
