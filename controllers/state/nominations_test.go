package state

import (
	"testing"
	"time"
)

func TestNominationsLifecycle(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.Nominate("claim-a", "pod-2")
	n.Nominate("claim-b", "pod-2") // re-nomination moves the pod
	if c, _ := n.ClaimOf("pod-2"); c != "claim-b" {
		t.Fatalf("pod-2 nominated to %q, want claim-b", c)
	}
	if got := n.PodsOf("claim-a"); len(got) != 1 || got[0] != "pod-1" {
		t.Fatalf("claim-a pods = %v, want [pod-1]", got)
	}

	// Not released yet: an empty nominatedNodeName is not a rejection.
	if n.Rejected("pod-1", "", "20", now) {
		t.Fatal("rejection before release")
	}
	n.MarkReleased("claim-a")
	n.Written("pod-1", "10")
	if n.Rejected("pod-1", "", "9", now) {
		t.Fatal("an event older than our nomination counted as a rejection")
	}
	if n.Rejected("pod-1", "claim-a", "11", now) {
		t.Fatal("a pod still nominated counted as rejected")
	}
	if !n.Rejected("pod-1", "", "11", now) {
		t.Fatal("a newer version without nominatedNodeName is a rejection")
	}
	if n.Expired("pod-1", now.Add(time.Second), 2*time.Second) {
		t.Fatal("expired within the grace period")
	}
	if _, ok := n.ClaimOf("pod-1"); !ok {
		t.Fatal("nomination dropped during the grace period")
	}
	if !n.Expired("pod-1", now.Add(2*time.Second), 2*time.Second) {
		t.Fatal("not expired after the grace period")
	}
	if _, ok := n.ClaimOf("pod-1"); ok {
		t.Fatal("nomination kept after it expired")
	}

	n.ForgetClaim("claim-b")
	if _, ok := n.ClaimOf("pod-2"); ok {
		t.Fatal("nomination kept after its claim was forgotten")
	}
	if !n.StartRelease("batch") || n.StartRelease("batch") {
		t.Fatal("a batch release must be taken by one worker at a time")
	}
	n.FinishRelease("batch")
	if !n.StartRelease("batch") {
		t.Fatal("release not handed back")
	}
}
