package fake

import (
	"strings"
	"time"
)

// tokenBucket is EC2's request-rate limit for one category of actions: a bucket of size tokens,
// refilled at perSecond; a call takes one token, or is answered RequestLimitExceeded.
type tokenBucket struct {
	size, tokens, perSecond float64
	last                    time.Time
}

func (b *tokenBucket) take(now time.Time) bool {
	if !b.last.IsZero() {
		b.tokens = min(b.size, b.tokens+now.Sub(b.last).Seconds()*b.perSecond)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// SetDescribeRateLimit gives the account one token bucket shared by every Describe* call (EC2's
// non-mutating actions; AWS documents a bucket of 100 refilled at 20 per second), timed by the
// fake's clock. Calls beyond it are answered RequestLimitExceeded and counted (DescribeThrottled).
func (s *Server) SetDescribeRateLimit(burst int, perSecond float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.describeBucket = &tokenBucket{size: float64(burst), tokens: float64(burst), perSecond: perSecond}
}

// DescribeThrottled is how many Describe* calls the rate limit refused.
func (s *Server) DescribeThrottled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.describeThrottled
}

// rateLimited takes a token for a Describe* action; false means RequestLimitExceeded.
func (s *Server) rateLimited(action string) bool {
	if s.describeBucket == nil || !strings.HasPrefix(action, "Describe") {
		return false
	}
	if s.describeBucket.take(s.clock()) {
		return false
	}
	s.describeThrottled++
	return true
}
