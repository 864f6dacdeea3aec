package disruption

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joist-dev/joist/api/v1"
)

func claimAt(name, rv string) *v1.NodeClaim {
	return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

// The cache lags the loop's own writes: a pass reading it right after them must see them (a claim
// deleted a moment ago counts as disrupted in the budgets), and forget them once the cache has.
func TestOwnWritesLaidOverALaggingCache(t *testing.T) {
	w := newOwnWrites()
	now := time.Now()
	deleted, patched, created := claimAt("a", "10"), claimAt("b", "12"), claimAt("c", "13")
	patched.SetAnnotations(map[string]string{"written": "yes"})
	w.delete(deleted)
	w.wrote(patched)
	w.create(created)

	got := w.overlay([]*v1.NodeClaim{claimAt("a", "10"), claimAt("b", "11")}, now)
	byName := map[string]*v1.NodeClaim{}
	for _, nc := range got {
		byName[nc.Name] = nc
	}
	if len(got) != 3 || byName["a"].DeletionTimestamp.IsZero() || byName["b"].Annotations["written"] != "yes" || byName["c"] == nil {
		t.Fatalf("overlay over a lagging cache = %+v, want a deleting, b as written, c as created", got)
	}

	// The cache catches up: b at the written version, c listed, a gone. Nothing is laid over any more.
	got = w.overlay([]*v1.NodeClaim{claimAt("b", "12"), claimAt("c", "13")}, now)
	if len(got) != 2 || got[0].Annotations["written"] != "" || len(w.written) != 0 || len(w.deleted) != 0 {
		t.Fatalf("overlay after the cache caught up = %+v (remembered %d written, %d deleted), want the cache's own copies and nothing remembered",
			got, len(w.written), len(w.deleted))
	}
}

// A claim the loop wrote (its command record, Disrupting) and then deleted: once the cache no longer
// lists it, it is gone — its written copy must not come back as a claim "created a moment ago". (It
// did until the TTL: a resurrected claim, still Disrupting, held a budget and was resumed and
// abandoned every pass as a command of a previous leader.)
func TestOwnWritesDoNotResurrectADeletedClaim(t *testing.T) {
	w := newOwnWrites()
	now := time.Now()
	written := claimAt("x", "20")
	written.SetAnnotations(map[string]string{v1.DisruptionCommandAnnotationKey: "{}"})
	w.wrote(written)
	w.delete(written)
	// Termination finishes before the next pass: the cache never lists the claim deleting.
	for pass := range 3 {
		if got := w.overlay(nil, now); len(got) != 0 {
			t.Fatalf("pass %d after the claim is gone: overlay = %d claim(s) (%s), want none", pass, len(got), got[0].Name)
		}
	}
	// Patched, then gone from the cache without this loop deleting it (termination, a user): gone too.
	w.wrote(claimAt("y", "30"))
	if got := w.overlay([]*v1.NodeClaim{claimAt("y", "29")}, now); len(got) != 1 {
		t.Fatalf("overlay = %d claims, want y", len(got))
	}
	if got := w.overlay(nil, now); len(got) != 0 {
		t.Fatalf("overlay after y is gone = %d claim(s), want none", len(got))
	}
}

// podSets, blocked and fresh replacements are per claim; a claim that is gone takes its entries
// with it, and a replacement no longer fresh is forgotten.
func TestForgetGonePrunesPerClaimMemory(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := &Controller{clock: clk, podSets: map[string]podSet{"a": {}, "gone": {}}, blocked: map[string]string{"a": "x", "gone": "y"},
		movedOnto: map[string]time.Time{"a": clk.Now(), "stale": clk.Now().Add(-freshHold), "gone": clk.Now()}}
	c.forgetGone(&cluster{claims: []*v1.NodeClaim{claimAt("a", "1"), claimAt("stale", "2")}})
	if len(c.podSets) != 1 || len(c.blocked) != 1 || c.blocked["a"] != "x" {
		t.Fatalf("after forgetGone podSets=%v blocked=%v, want only claim a", c.podSets, c.blocked)
	}
	if _, ok := c.movedOnto["a"]; !ok || len(c.movedOnto) != 1 {
		t.Fatalf("after forgetGone movedOnto=%v, want only the fresh replacement a", c.movedOnto)
	}
	if fresh := c.freshReplacements(clk.Now()); len(fresh) != 1 || !fresh["a"] {
		t.Errorf("freshReplacements = %v, want a", fresh)
	}
}
