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
	entries map[UnavailableOffering]time.Time // expiry
}

// NewUnavailableOfferings returns an empty cache; ttl ≤ 0 means DefaultUnavailableTTL.
func NewUnavailableOfferings(c clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	if ttl <= 0 {
		ttl = DefaultUnavailableTTL
	}
	return &UnavailableOfferings{clock: c, ttl: ttl, entries: map[UnavailableOffering]time.Time{}}
}

// MarkUnavailable records the offering as unavailable for the cache's TTL.
func (u *UnavailableOfferings) MarkUnavailable(o UnavailableOffering) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.entries[o] = u.clock.Now().Add(u.ttl)
}

// IsUnavailable reports whether the offering failed within the TTL.
func (u *UnavailableOfferings) IsUnavailable(o UnavailableOffering) bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	expiry, ok := u.entries[o]
	if !ok {
		return false
	}
	if !u.clock.Now().Before(expiry) {
		delete(u.entries, o)
		return false
	}
	return true
}
