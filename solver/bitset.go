package solver

import "math/bits"

// bitset indexes a pool's instance types.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) clear(i int)    { b[i>>6] &^= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

func (b bitset) clone() bitset { return append(bitset(nil), b...) }

func (b bitset) and(o bitset) bitset {
	out := make(bitset, len(b))
	for i := range b {
		out[i] = b[i] & o[i]
	}
	return out
}

func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// each calls fn for every set index in increasing order until fn returns false.
func (b bitset) each(fn func(i int) bool) {
	for wi, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			if !fn(wi*64 + t) {
				return
			}
			w &= w - 1
		}
	}
}

// eachDesc is each in decreasing order.
func (b bitset) eachDesc(fn func(i int) bool) {
	for wi := len(b) - 1; wi >= 0; wi-- {
		w := b[wi]
		for w != 0 {
			t := 63 - bits.LeadingZeros64(w)
			if !fn(wi*64 + t) {
				return
			}
			w &^= 1 << uint(t)
		}
	}
}
