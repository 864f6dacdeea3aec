package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/utils/clock"

	v1 "github.com/joist-dev/joist/api/v1"
)

// fleetLaunches remembers the CreateFleet request sent for each claim, so that a Create retried
// after its status write failed, or after a timed-out answer, sends the very same request with the
// same ClientToken, and EC2 answers with the fleet (and instance) of the first call instead of
// launching a second instance, even while DescribeInstances does not show the first one yet.
type fleetLaunches struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu   sync.Mutex
	sent map[string]sentFleet // claim UID (or name) → request
}

type sentFleet struct {
	input *ec2.CreateFleetInput
	at    time.Time
}

func newFleetLaunches(clk clock.PassiveClock) *fleetLaunches {
	return &fleetLaunches{clock: clk, ttl: 15 * time.Minute, sent: map[string]sentFleet{}}
}

func claimKey(claim *v1.NodeClaim) string {
	if claim.UID != "" {
		return string(claim.UID)
	}
	return claim.Name
}

// get returns the request sent for the claim within the TTL, or nil.
func (f *fleetLaunches) get(claim *v1.NodeClaim) *ec2.CreateFleetInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	for k, s := range f.sent {
		if now.Sub(s.at) > f.ttl {
			delete(f.sent, k)
		}
	}
	if s, ok := f.sent[claimKey(claim)]; ok {
		return s.input
	}
	return nil
}

func (f *fleetLaunches) remember(claim *v1.NodeClaim, in *ec2.CreateFleetInput) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[claimKey(claim)] = sentFleet{input: in, at: f.clock.Now()}
}

// forget drops the claim's request once EC2 answered without launching (the token is spent or
// unused: a new attempt builds a new request).
func (f *fleetLaunches) forget(claim *v1.NodeClaim) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sent, claimKey(claim))
}

// clientToken derives CreateFleet's idempotency token from the claim's UID and the request: the
// same claim sending the same request gets EC2's first answer back; a request that differs (after
// a restart forgot the first one) gets a token of its own rather than IdempotentParameterMismatch.
// At most 64 ASCII characters, as EC2 requires.
func clientToken(claim *v1.NodeClaim, in *ec2.CreateFleetInput) string {
	body, _ := json.Marshal(in) // plain data: cannot fail
	h := sha256.Sum256(append([]byte(claimKey(claim)+"\n"), body...))
	return "joist-" + hex.EncodeToString(h[:20])
}
