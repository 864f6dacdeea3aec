package disruption

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	w.wrote(created)

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

// podSets and blocked are per claim; a claim that is gone takes its entries with it.
func TestForgetGonePrunesPerClaimMemory(t *testing.T) {
	c := &Controller{podSets: map[string]podSet{"a": {}, "gone": {}}, blocked: map[string]string{"a": "x", "gone": "y"}}
	c.forgetGone(&cluster{claims: []*v1.NodeClaim{claimAt("a", "1")}})
	if len(c.podSets) != 1 || len(c.blocked) != 1 || c.blocked["a"] != "x" {
		t.Fatalf("after forgetGone podSets=%v blocked=%v, want only claim a", c.podSets, c.blocked)
	}
}
