package state

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
	if rejected(n, "pod-1", "", "20", false, now) {
		t.Fatal("rejection before release")
	}
	n.MarkReleased("claim-a", now)
	n.Written("pod-1", "10")
	if rejected(n, "pod-1", "", "9", false, now) {
		t.Fatal("an event older than our nomination counted as a rejection")
	}
	if rejected(n, "pod-1", "claim-a", "11", false, now) {
		t.Fatal("a pod still nominated counted as rejected")
	}

	if !rejected(n, "pod-1", "", "11", false, now) {
		t.Fatal("a newer version without nominatedNodeName is a rejection")
	}
	// The scheduler's preemption step can leave the field set on a pod it could not place.
	n.Nominate("claim-a", "pod-4")
	n.Written("pod-4", "10")
	if rejected(n, "pod-4", "node-a", "10", true, now) {
		t.Fatal("the unschedulable mark our own write carried over counted as a rejection")
	}
	if !rejected(n, "pod-4", "node-a", "12", true, now) {
		t.Fatal("a pod marked unschedulable after our nomination is rejected, nominated or not")
	}
	if expired(n, "pod-1", now.Add(time.Second), 2*time.Second) {
		t.Fatal("expired within the grace period")
	}
	if _, ok := n.ClaimOf("pod-1"); !ok {
		t.Fatal("nomination dropped during the grace period")
	}
	if !expired(n, "pod-1", now.Add(2*time.Second), 2*time.Second) {
		t.Fatal("not expired after the grace period")
	}
	if _, ok := n.ClaimOf("pod-1"); ok {
		t.Fatal("nomination kept after it expired")
	}

	n.ForgetClaim("claim-b")
	if _, ok := n.ClaimOf("pod-2"); ok {
		t.Fatal("nomination kept after its claim was forgotten")
	}
}

func TestRejectionGraceCountsFromTheLastBind(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.Nominate("claim-a", "pod-2")
	n.MarkReleased("claim-a", now)
	n.Written("pod-1", "10")
	if !rejected(n, "pod-1", "", "11", false, now) {
		t.Fatal("rejection not recorded")
	}
	// The scheduler is still binding the batch: pod-2 binds 1.5s after the rejection.
	n.Bound("pod-2", now.Add(1500*time.Millisecond))
	if left, ok := n.ExpiresIn("pod-1", now.Add(2*time.Second), 2*time.Second); !ok || left != 1500*time.Millisecond {
		t.Fatalf("ExpiresIn = %s, %v; want 1.5s left, counted from the last bind", left, ok)
	}
	if expired(n, "pod-1", now.Add(3*time.Second), 2*time.Second) {
		t.Fatal("expired although a nominee bound less than the grace ago")
	}
	if !expired(n, "pod-1", now.Add(3500*time.Millisecond), 2*time.Second) {
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
	rejected(n, "pod-3", "", "21", false, now.Add(10*time.Second))
	n.Bound("pod-other", now.Add(11*time.Second))
	if !expired(n, "pod-3", now.Add(12*time.Second), 2*time.Second) {
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
	if !rejected(n, "pod-1", "", "11", false, now) {
		t.Fatal("rejection not recorded")
	}
	if !n.StartRenomination("pod-1") {
		t.Fatal("first rejection must be renominated")
	}
	n.Renominated("pod-1", "12")
	if _, ok := n.ExpiresIn("pod-1", now, time.Second); ok {
		t.Fatal("a renominated pod still counts as rejected")
	}
	if rejected(n, "pod-1", "", "12", false, now) {
		t.Fatal("our own renomination's version counted as a rejection")
	}
	if !rejected(n, "pod-1", "", "13", false, now) {
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
	if stalled(n, "pod-1", now.Add(time.Minute), 2*time.Second) {
		t.Fatal("a pod of an unreleased claim is not stalled")
	}
	n.MarkReleased("claim-a", now)
	n.Bound("pod-2", now.Add(3*time.Second))
	if stalled(n, "pod-1", now.Add(4*time.Second), 2*time.Second) {
		t.Fatal("stalled although a nominee bound less than the grace ago")
	}
	if !stalled(n, "pod-1", now.Add(5*time.Second), 2*time.Second) {
		t.Fatal("not stalled the grace after the last bind")
	}
	if stalled(n, "pod-1", now.Add(6*time.Second), 2*time.Second) {
		t.Fatal("a stall is reported once")
	}
	if left, ok := n.ExpiresIn("pod-1", now.Add(6*time.Second), 2*time.Second); !ok || left != time.Second {
		t.Fatalf("ExpiresIn = %s, %v; a stalled pod is rejected from the moment it was found", left, ok)
	}
}

// rejected records a rejection the way the nomination controller does: ask, then record.
func rejected(n *Nominations, pod types.UID, nominatedNodeName, resourceVersion string, unschedulable bool, now time.Time) bool {
	return n.IsRejection(pod, nominatedNodeName, resourceVersion, unschedulable) && n.MarkRejected(pod, now)
}

func stalled(n *Nominations, pod types.UID, now time.Time, grace time.Duration) bool {
	return n.IsStalled(pod, now, grace) && n.MarkRejected(pod, now)
}

// expired sweeps at now and reports whether pod's nomination was among those that expired.
func expired(n *Nominations, pod types.UID, now time.Time, grace time.Duration) bool {
	for _, uid := range n.Sweep(now, grace, nil) {
		if uid == pod {
			return true
		}
	}
	return false
}

// The queries answer the same however often they are asked: only MarkRejected and Sweep record.
func TestQueriesDoNotMutate(t *testing.T) {
	n := NewNominations()
	now := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.MarkReleased("claim-a", now)
	n.Written("pod-1", "10")
	for i := 0; i < 3; i++ {
		if !n.IsRejection("pod-1", "", "11", false) {
			t.Fatalf("ask %d: IsRejection changed its answer", i)
		}
		if !n.IsStalled("pod-1", now.Add(time.Minute), 2*time.Second) {
			t.Fatalf("ask %d: IsStalled changed its answer", i)
		}
	}
	if _, ok := n.ExpiresIn("pod-1", now, time.Second); ok {
		t.Fatal("asking recorded a rejection")
	}
	if !n.MarkRejected("pod-1", now) || n.MarkRejected("pod-1", now) {
		t.Fatal("MarkRejected records once")
	}
	if n.IsRejection("pod-1", "", "12", false) || n.IsStalled("pod-1", now.Add(time.Minute), time.Second) {
		t.Fatal("a recorded rejection is not new")
	}
	if left, ok := n.ExpiresIn("pod-1", now.Add(3*time.Second), 2*time.Second); !ok || left > 0 {
		t.Fatalf("ExpiresIn = %s, %v; want expired", left, ok)
	}
	if _, ok := n.ClaimOf("pod-1"); !ok {
		t.Fatal("ExpiresIn dropped the nomination; only Sweep may")
	}
	n.Nominate("claim-old", "pod-2")
	if got := n.Sweep(now.Add(3*time.Second), 2*time.Second, []string{"claim-old"}); len(got) != 1 || got[0] != "pod-1" {
		t.Fatalf("Sweep expired %v, want [pod-1]", got)
	}
	if _, ok := n.ClaimOf("pod-2"); ok {
		t.Fatal("Sweep kept a nomination to a stale claim")
	}
	if !n.Turned("pod-1") || !n.Known("pod-1") {
		t.Fatal("an expired nomination must be remembered as turned away")
	}
}

// A node released later holds off the stall and rejection of pods of a node released earlier, as a
// bind does: the kube-scheduler has the new node's pods to work through first.
func TestRejectionGraceCountsFromTheLastRelease(t *testing.T) {
	n := NewNominations()
	t0 := time.Unix(1000, 0)
	n.Nominate("a", "p")
	n.MarkReleased("a", t0)
	n.Nominate("b", "q")
	n.MarkReleased("b", t0.Add(1500*time.Millisecond))
	if stalled(n, "p", t0.Add(2500*time.Millisecond), 2*time.Second) {
		t.Error("p stalled 1s after node b's release; the grace counts from the last release")
	}
	if !stalled(n, "p", t0.Add(3600*time.Millisecond), 2*time.Second) {
		t.Error("p not stalled 2.1s after the last release")
	}
}

// A nominee that bound within grace means the scheduler is still working: no pod is stalled, even
// one whose claim was released long before.
func TestNothingStallsWhileNomineesBind(t *testing.T) {
	n := NewNominations()
	t0 := time.Unix(100, 0)
	n.Nominate("claim-a", "pod-1")
	n.MarkReleased("claim-a", t0)
	n.Nominate("claim-b", "pod-2")
	n.Bound("pod-2", t0.Add(time.Minute))
	if n.IsStalled("pod-1", t0.Add(time.Minute+time.Second), 2*time.Second) {
		t.Error("pod-1 stalled although a nominee bound a second ago")
	}
	if !n.IsStalled("pod-1", t0.Add(time.Minute+2*time.Second), 2*time.Second) {
		t.Error("pod-1 not stalled grace after the last bind")
	}
}

// BenchmarkIsStalledWhileBinding is the stall watch's question for each of 20,000 pending pods while
// nominees bind (a large scale-up): answered from the last bind's time, without the per-pod lookups.
func BenchmarkIsStalledWhileBinding(b *testing.B) {
	n := NewNominations()
	now := time.Unix(1000, 0)
	uids := make([]types.UID, 20000)
	for i := range uids {
		uids[i] = types.UID(fmt.Sprintf("pod-%05d", i))
		claim := fmt.Sprintf("claim-%04d", i/10)
		n.Nominate(claim, uids[i])
		n.MarkReleased(claim, now.Add(-time.Minute))
	}
	n.Bound(uids[0], now)
	b.ResetTimer()
	for i := range b.N {
		n.IsStalled(uids[i%len(uids)], now.Add(time.Second), 2*time.Second)
	}
}
