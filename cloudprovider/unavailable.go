package cloudprovider

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// DefaultUnavailableTTL is how long an offering that failed for lack of capacity is skipped.
const DefaultUnavailableTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings that recently failed with insufficient capacity, so the
// solver and the next launch skip them and the next-cheapest offering is used. Safe for concurrent use.
type UnavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu      sync.Mutex
	entries map[UnavailableOffering]time.Time // expiry; {CapacityType: ct} alone covers a whole capacity type
	subnets map[string]time.Time              // subnet id → expiry
}

// NewUnavailableOfferings returns an empty cache; ttl ≤ 0 means DefaultUnavailableTTL.
func NewUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	if ttl <= 0 {
		ttl = DefaultUnavailableTTL
	}
	return &UnavailableOfferings{clock: c, ttl: ttl, entries: map[UnavailableOffering]time.Time{}, subnets: map[string]time.Time{}}
}

// MarkUnavailable records the offering as unavailable for the cache's TTL.
func (u *UnavailableOfferings) MarkUnavailable(o UnavailableOffering) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries[o] = u.clock.Now().Add(u.ttl)
}

// MarkCapacityTypeUnavailable records every offering of a capacity type as unavailable for the
// TTL (an account limit such as the spot instance count, or spot not usable in the account at all).
func (u *UnavailableOfferings) MarkCapacityTypeUnavailable(capacityType string) {
	u.MarkUnavailable(UnavailableOffering{CapacityType: capacityType})
}

// IsUnavailable reports whether the offering, or its whole capacity type, failed within the TTL.
func (u *UnavailableOfferings) IsUnavailable(o UnavailableOffering) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return live(u.clock.Now(), u.entries, o) || live(u.clock.Now(), u.entries, UnavailableOffering{CapacityType: o.CapacityType})
}

// MarkSubnetUnavailable records a subnet without free addresses for the TTL: launches use
// another subnet of its zone, and a zone whose subnets are all unavailable offers nothing.
func (u *UnavailableOfferings) MarkSubnetUnavailable(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.subnets[id] = u.clock.Now().Add(u.ttl)
}

// IsSubnetUnavailable reports whether the subnet ran out of addresses within the TTL.
func (u *UnavailableOfferings) IsSubnetUnavailable(id string) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return live(u.clock.Now(), u.subnets, id)
}

// live reports whether key's entry has not expired, dropping it if it has. Callers hold mu.
func live[K comparable](now time.Time, m map[K]time.Time, key K) bool {
	expiry, ok := m[key]
	if !ok {
		return false
	}
	if !now.Before(expiry) {
		delete(m, key)
		return false
	}
	return true
}
