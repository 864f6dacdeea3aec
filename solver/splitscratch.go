package solver

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// splitScratch holds the working buffers of splits' two fills (fillShare, fillBalanced), reused
// from one candidate split to the next: the split pass and the pair rebalance try thousands of
// them per solve, and allocating each fill's vectors afresh was most of those passes' garbage.
type splitScratch struct {
	inA   [2][]bool
	used  [6]resVec // usedA, usedB of fillShare; usedA, usedB, room of fillBalanced; the rest split floors by
	taken []int
	ports []hostPort
	out   [2]split
	cands []pairCand // split's cheaper types, for its floor
	// groups, groupOf: byClass's result and index, reused
	groups  [][]int
	groupOf map[*class]int
}

// byClass groups the indices of order (into n.pods) by pod class, classes in order of first
// appearance, for the balancing fill; the result lives in sb's buffers until the next call.
func (sb *splitScratch) byClass(n *node, order []int) [][]int {
	if sb.groupOf == nil {
		sb.groupOf = map[*class]int{}
	}
	clear(sb.groupOf)
	out := sb.groups[:0]
	for _, i := range order {
		c := n.cls[i]
		k, ok := sb.groupOf[c]
		if !ok {
			k = len(out)
			sb.groupOf[c] = k
			if k < cap(out) {
				out = out[:k+1]
				out[k] = out[k][:0]
			} else {
				out = append(out, nil)
			}
		}
		out[k] = append(out[k], i)
	}
	sb.groups = out
	return out
}

// bools returns inA[i] resized to n, all false.
func (sb *splitScratch) bools(i, n int) []bool {
	b := slices.Grow(sb.inA[i][:0], n)[:n]
	clear(b)
	sb.inA[i] = b
	return b
}

// ints returns the taken counters resized to n, all zero.
func (sb *splitScratch) ints(n int) []int {
	t := slices.Grow(sb.taken[:0], n)[:n]
	clear(t)
	sb.taken = t
	return t
}

// scratchVec returns splitBuf's vector i, zeroed.
func (s *solver) scratchVec(i int) resVec {
	v := s.splitBuf.used[i]
	if len(v) != s.d.n() {
		v = s.d.zero()
		s.splitBuf.used[i] = v
		return v
	}
	clear(v)
	return v
}

// keep copies a split out of splitBuf, for a caller that holds on to it past the next splits.
func (sp split) keep() split {
	return split{inA: slices.Clone(sp.inA), usedA: sp.usedA.clone(), usedB: sp.usedB.clone()}
}

// pairScratch holds rebalancePair's working buffers: the two nodes' pods together and their
// order by share.
type pairScratch struct {
	cands []pairCand
	// applyPair's two nodes before they are kept
	podsA, podsB []*corev1.Pod
	clsA, clsB   []*class
	usedA, usedB resVec
	both         node
	order        []int
	share        []float64
	// rebalancePair's floors: what the largest candidate and part A's type leave of the pair
	overV, restV resVec
}

func (pb *pairScratch) over(zero func() resVec) resVec {
	if pb.overV == nil {
		pb.overV = zero()
	}
	return pb.overV
}

func (pb *pairScratch) rest(zero func() resVec) resVec {
	if pb.restV == nil {
		pb.restV = zero()
	}
	return pb.restV
}
