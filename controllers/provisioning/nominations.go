package provisioning

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// nominations remembers which pending pods each launched NodeClaim was planned for, so that the next
// batch counts those pods as already provided for instead of launching again for them. It is memory
// only: after a restart, in-flight claims count as empty capacity and the solver re-packs the pending
// pods into them first (they were sized for those pods), so no duplicate capacity is launched.
type nominations struct {
	mu      sync.Mutex
	byClaim map[string]map[types.UID]struct{}
	byPod   map[types.UID]string
}

func newNominations() *nominations {
	return &nominations{byClaim: map[string]map[types.UID]struct{}{}, byPod: map[types.UID]string{}}
}

// Nominate records that pod should land on claim (replacing any earlier nomination).
func (n *nominations) Nominate(claim string, pod types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.byPod[pod]; ok {
		delete(n.byClaim[old], pod)
	}
	if n.byClaim[claim] == nil {
		n.byClaim[claim] = map[types.UID]struct{}{}
	}
	n.byClaim[claim][pod] = struct{}{}
	n.byPod[pod] = claim
}

// ClaimOf returns the claim the pod is nominated to.
func (n *nominations) ClaimOf(pod types.UID) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.byPod[pod]
	return c, ok
}

// ForgetClaim drops every nomination to claim (it was deleted, or its pods had time to bind).
func (n *nominations) ForgetClaim(claim string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for pod := range n.byClaim[claim] {
		delete(n.byPod, pod)
	}
	delete(n.byClaim, claim)
}

// ForgetPod drops the pod's nomination (it was bound or deleted).
func (n *nominations) ForgetPod(pod types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.byPod[pod]; ok {
		delete(n.byClaim[c], pod)
		delete(n.byPod, pod)
	}
}

// Claims returns the claims that have nominations.
func (n *nominations) Claims() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.byClaim))
	for c := range n.byClaim {
		out = append(out, c)
	}
	return out
}
