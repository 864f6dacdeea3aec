package disruption

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/joist-dev/joist/solver"
)

// The candidate lists' keys grow with the candidates, not with their square: a key built by +=
// per candidate was 384 of the 626 MB the manager allocated in bench-scale's settle window at
// 5,000 nodes.
func TestSliceCandidatesAllocatesLinearly(t *testing.T) {
	const n = 5000
	var preferred, deferred []solver.Candidate
	for i := range n {
		preferred = append(preferred, solver.Candidate{Node: fmt.Sprintf("general-%05d-abcde", i)})
		deferred = append(deferred, solver.Candidate{Node: fmt.Sprintf("general-%05d-vwxyz", i)})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tries := sliceCandidates(preferred, deferred, nil)
	runtime.ReadMemStats(&after)
	if len(tries) != 2 || len(tries[0]) != n || len(tries[1]) != 2*n {
		t.Fatalf("%d candidate lists, want the preferred (%d) and all (%d)", len(tries), n, 2*n)
	}
	perCandidate := float64(after.TotalAlloc-before.TotalAlloc) / (3 * n)
	t.Logf("%.0f bytes allocated per candidate listed", perCandidate)
	if perCandidate > 200 {
		t.Errorf("listing the candidates allocated %.0f bytes per candidate; want at most 200", perCandidate)
	}
}
