package solver

import (
	"math/rand"
	"testing"
)

// TestZonesForMatchesOffers: zonesFor reads the per-capacity-type zone masks indexOffers builds;
// on random offer lists (zones and capacity types up to 63) it is the union of the zones of the
// offers whose capacity type cm allows, within zm, as a scan of the offers gives.
func TestZonesForMatchesOffers(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 300; trial++ {
		it := &itype{}
		for range rng.Intn(12) {
			it.offers = append(it.offers, offer{zone: rng.Intn(64), ct: rng.Intn(1 + rng.Intn(64))})
		}
		it.indexOffers()
		for range 20 {
			zm, cm := rng.Uint64(), rng.Uint64()
			if rng.Intn(3) == 0 {
				cm = 1 << uint(rng.Intn(4))
			}
			var want uint64
			for _, o := range it.offers {
				if cm&(1<<uint(o.ct)) != 0 {
					want |= 1 << uint(o.zone)
				}
			}
			want &= zm
			if got := it.zonesFor(zm, cm); got != want {
				t.Fatalf("trial %d: zonesFor(%x, %x) = %x, offers give %x", trial, zm, cm, got, want)
			}
		}
	}
}
