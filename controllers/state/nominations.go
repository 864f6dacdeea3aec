// Package state holds in-memory state shared between controllers of one manager, passed to them
// explicitly by the wiring in package controllers.
package state

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Nominations remembers which pending pods each launched NodeClaim was planned for. The provisioner
// counts those pods as provided for, so the next batch does not launch again for them; the NodeClaim
// lifecycle controller points them at the claim's node (status.nominatedNodeName) just before the node
// becomes schedulable, so the kube-scheduler places them as planned. It is memory only: after a
// restart, in-flight claims count as empty capacity and the solver re-packs the pending pods into them
// first (they were sized for those pods), so no duplicate capacity is launched.
type Nominations struct {
	mu      sync.Mutex
	byClaim map[string]map[types.UID]struct{}
	byPod   map[types.UID]string
}

// NewNominations returns an empty store.
func NewNominations() *Nominations {
	return &Nominations{byClaim: map[string]map[types.UID]struct{}{}, byPod: map[types.UID]string{}}
}

// Nominate records that pod should land on claim (replacing any earlier nomination).
func (n *Nominations) Nominate(claim string, pod types.UID) {
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
func (n *Nominations) ClaimOf(pod types.UID) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.byPod[pod]
	return c, ok
}

// ForgetClaim drops every nomination to claim (it was deleted, or its pods had time to bind).
func (n *Nominations) ForgetClaim(claim string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for pod := range n.byClaim[claim] {
		delete(n.byPod, pod)
	}
	delete(n.byClaim, claim)
}

// ForgetPod drops the pod's nomination (it was bound or deleted).
func (n *Nominations) ForgetPod(pod types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.byPod[pod]; ok {
		delete(n.byClaim[c], pod)
		delete(n.byPod, pod)
	}
}

// PodsOf returns the UIDs of the pods nominated to claim.
func (n *Nominations) PodsOf(claim string) []types.UID {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]types.UID, 0, len(n.byClaim[claim]))
	for uid := range n.byClaim[claim] {
		out = append(out, uid)
	}
	return out
}
