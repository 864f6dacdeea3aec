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
	if n.Rejected("pod-1", "", "20", false, now) {
		t.Fatal("rejection before release")
	}
	n.MarkReleased("claim-a", now)
	n.Written("pod-1", "10")
	if n.Rejected("pod-1", "", "9", false, now) {
		t.Fatal("an event older than our nomination counted as a rejection")
	}
	if n.Rejected("pod-1", "claim-a", "11", false, now) {
		t.Fatal("a pod still nominated counted as rejected")
	}

	if !n.Rejected("pod-1", "", "11", false, now) {
		t.Fatal("a newer version without nominatedNodeName is a rejection")
	}
	// The scheduler's preemption step can leave the field set on a pod it could not place.
	n.Nominate("claim-a", "pod-4")
	n.Written("pod-4", "10")
	if n.Rejected("pod-4", "node-a", "10", true, now) {
		t.Fatal("the unschedulable mark our own write carried over counted as a rejection")
	}
	if !n.Rejected("pod-4", "node-a", "12", true, now) {
		t.Fatal("a pod marked unschedulable after our nomination is rejected, nominated or not")
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

func TestRejectionGraceCountsFromTheLastBind(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.Nominate("claim-a", "pod-2")
	n.MarkReleased("claim-a", now)
	n.Written("pod-1", "10")
	if !n.Rejected("pod-1", "", "11", false, now) {
		t.Fatal("rejection not recorded")
	}
	// The scheduler is still binding the batch: pod-2 binds 1.5s after the rejection.
	n.Bound("pod-2", now.Add(1500*time.Millisecond))
	if left, ok := n.ExpiresIn("pod-1", now.Add(2*time.Second), 2*time.Second); !ok || left != 1500*time.Millisecond {
		t.Fatalf("ExpiresIn = %s, %v; want 1.5s left, counted from the last bind", left, ok)
	}
	if n.Expired("pod-1", now.Add(3*time.Second), 2*time.Second) {
		t.Fatal("expired although a nominee bound less than the grace ago")
	}
	if !n.Expired("pod-1", now.Add(3500*time.Millisecond), 2*time.Second) {
		t.Fatal("not expired the grace after the last bind")
	}
	if !n.Turned("pod-1") {
		t.Fatal("an expired pod's nominatedNodeName must count as stale")
	}
	if _, ok := n.ExpiresIn("pod-1", now.Add(4*time.Second), 2*time.Second); ok {
		t.Fatal("an expired pod still reported as a rejected nominee")
	}
	// A bind of a pod nobody nominated is not progress of a batch.
	n.Nominate("claim-a", "pod-3")
	n.Written("pod-3", "20")
	n.Rejected("pod-3", "", "21", false, now.Add(10*time.Second))
	n.Bound("pod-other", now.Add(11*time.Second))
	if !n.Expired("pod-3", now.Add(12*time.Second), 2*time.Second) {
		t.Fatal("an unrelated pod's bind delayed the expiry")
	}
}

func TestWrittenSince(t *testing.T) {
	n := NewNominations()
	n.Written("pod-1", "10")
	if !n.WrittenSince("pod-1", "9") {
		t.Error("a cached copy older than our write must count as not showing it yet")
	}
	if n.WrittenSince("pod-1", "10") || n.WrittenSince("pod-1", "12") {
		t.Error("a cached copy as new as our write shows it")
	}
	if n.WrittenSince("pod-2", "1") {
		t.Error("no write recorded for pod-2")
	}
}

func TestRenominationOncePerPod(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.MarkReleased("claim-a", now)
	n.Written("pod-1", "10")
	if !n.Rejected("pod-1", "", "11", false, now) {
		t.Fatal("rejection not recorded")
	}
	if !n.StartRenomination("pod-1") {
		t.Fatal("first rejection must be renominated")
	}
	n.Renominated("pod-1", "12")
	if _, ok := n.ExpiresIn("pod-1", now, time.Second); ok {
		t.Fatal("a renominated pod still counts as rejected")
	}
	if n.Rejected("pod-1", "", "12", false, now) {
		t.Fatal("our own renomination's version counted as a rejection")
	}
	if !n.Rejected("pod-1", "", "13", false, now) {
		t.Fatal("a second rejection after the renomination not recorded")
	}
	if n.StartRenomination("pod-1") {
		t.Fatal("a pod is renominated once; the second rejection goes to the grace period")
	}
	n.ForgetPod("pod-1")
	if n.Turned("pod-1") {
		t.Fatal("forgetting a pod must forget it was turned away")
	}
	if !n.StartRenomination("pod-1") {
		t.Fatal("forgetting a pod must forget its renomination too")
	}
}

func TestStalled(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.Nominate("claim-a", "pod-2")
	if n.Stalled("pod-1", now.Add(time.Minute), 2*time.Second) {
		t.Fatal("a pod of an unreleased claim is not stalled")
	}
	n.MarkReleased("claim-a", now)
	n.Bound("pod-2", now.Add(3*time.Second))
	if n.Stalled("pod-1", now.Add(4*time.Second), 2*time.Second) {
		t.Fatal("stalled although a nominee bound less than the grace ago")
	}
	if !n.Stalled("pod-1", now.Add(5*time.Second), 2*time.Second) {
		t.Fatal("not stalled the grace after the last bind")
	}
	if n.Stalled("pod-1", now.Add(6*time.Second), 2*time.Second) {
		t.Fatal("a stall is reported once")
	}
	if left, ok := n.ExpiresIn("pod-1", now.Add(6*time.Second), 2*time.Second); !ok || left != time.Second {
		t.Fatalf("ExpiresIn = %s, %v; a stalled pod is rejected from the moment it was found", left, ok)
	}
}
