package solver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSplitsAllocateNothingOnceWarm holds the split pass's candidate splits to the reused
// buffers of splitScratch: after the first call, trying a split allocates nothing (each used to
// allocate its part-A mask and up to four vectors), and a kept split is a copy that the next
// call does not overwrite.
func TestSplitsAllocateNothingOnceWarm(t *testing.T) {
	s := &solver{d: newDims(nil)}
	small, big := &class{key: "small", req: s.d.zero()}, &class{key: "big", req: s.d.zero()}
	small.req[0], big.req[0] = 100, 300
	n := &node{used: s.d.zero()}
	for i := 0; i < 8; i++ {
		c := small
		if i%2 == 0 {
			c = big
		}
		n.pods, n.cls = append(n.pods, &corev1.Pod{}), append(n.cls, c)
		n.used.add(c.req)
	}
	order := []int{0, 2, 4, 6, 1, 3, 5, 7}
	byClass := [][]int{{0, 2, 4, 6}, {1, 3, 5, 7}}
	alloc := s.d.zero()
	alloc[0], alloc[s.d.pods] = 700, 110
	sps := s.splits(n, order, byClass, alloc)
	if len(sps) != 2 {
		t.Fatalf("splits = %d, want 2", len(sps))
	}
	kept := sps[0].keep()
	if allocs := testing.AllocsPerRun(20, func() { s.splits(n, order, byClass, alloc) }); allocs != 0 {
		t.Errorf("splits allocated %.0f times per call once warm, want 0", allocs)
	}
	alloc[0] = 300
	s.splits(n, order, byClass, alloc)
	if kept.usedA[0] != 700 || !kept.inA[0] || !kept.inA[1] || !kept.inA[2] || kept.inA[4] {
		t.Errorf("kept split changed by a later call: usedA %v inA %v", kept.usedA, kept.inA)
	}
}
