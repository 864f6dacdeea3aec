// Package state holds in-memory state shared between controllers of one manager, passed to them
// explicitly by the wiring in package controllers.
package state

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Nominations remembers which pending pods each NodeClaim was planned for. The provisioner counts
// those pods as provided for, so the next batch does not launch again for them; the nomination
// controller (controllers/nomination) points them at the claim's node (status.nominatedNodeName) just
// before the node becomes schedulable, so the kube-scheduler places them as planned. It is memory
// only: after a restart, in-flight claims count as empty capacity and the solver re-packs the pending
// pods into them first (they were sized for those pods), so no duplicate capacity is launched.
//
// Queries (ClaimOf, PodsOf, IsRejection, IsStalled, ExpiresIn, Turned, WrittenSince, …) never change
// the store; the methods that do are named for what they record (Nominate, MarkRejected, Sweep, …).
type Nominations struct {
	mu       sync.Mutex
	byClaim  map[string]map[types.UID]struct{}
	byPod    map[types.UID]string
	released map[string]time.Time
	// written holds the resourceVersion of each pod as our nominatedNodeName patch left it.
	written map[types.UID]int64
	// rejected holds when the scheduler first turned a pod away from its released claim.
	rejected map[types.UID]time.Time
	// lastBind is when a nominated pod last bound to a node, or a node was last released.
	lastBind time.Time
	// renominated holds the pods whose nomination was written again after a rejection.
	renominated map[types.UID]bool
	// turned holds the pods whose nomination expired after a rejection, until they bind or go.
	turned map[types.UID]bool
	// reservations holds room a disruption command set aside for the re-created pods of its drained
	// nodes (see reservations.go).
	reservations map[string]*reservation
	// held maps the drained pods still present to their reservation slot.
	held map[types.UID]*slot
	// moved holds the pods that took a reservation, until they are deleted.
	moved map[types.UID]bool
	// reservedClaims and reservedOwners count the slots in force per destination claim and owner.
	reservedClaims map[string]int
	reservedOwners map[types.UID]int
}

// NewNominations returns an empty store.
func NewNominations() *Nominations {
	return &Nominations{byClaim: map[string]map[types.UID]struct{}{}, byPod: map[types.UID]string{}, released: map[string]time.Time{},
		written: map[types.UID]int64{}, rejected: map[types.UID]time.Time{}, renominated: map[types.UID]bool{}, turned: map[types.UID]bool{},
		reservations: map[string]*reservation{}, held: map[types.UID]*slot{}, moved: map[types.UID]bool{},
		reservedClaims: map[string]int{}, reservedOwners: map[types.UID]int{}}
}

// Nominate records that pod should land on claim (replacing any earlier nomination).
func (n *Nominations) Nominate(claim string, pod types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nominateLocked(claim, pod)
}

func (n *Nominations) nominateLocked(claim string, pod types.UID) {
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

// Known reports whether Joist remembers nominating the pod: it is nominated, or its nomination
// expired after a rejection (its status.nominatedNodeName, if set, is Joist's and stale).
func (n *Nominations) Known(pod types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.byPod[pod]
	return ok || n.turned[pod]
}

// ForgetClaim drops every nomination to claim (it was deleted, or its pods had time to bind) and
// what was recorded about those pods' nominations.
func (n *Nominations) ForgetClaim(claim string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forgetClaimLocked(claim)
}

func (n *Nominations) forgetClaimLocked(claim string) {
	for pod := range n.byClaim[claim] {
		delete(n.byPod, pod)
		delete(n.written, pod)
		delete(n.rejected, pod)
		delete(n.renominated, pod)
	}
	delete(n.byClaim, claim)
	delete(n.released, claim)
}

// MarkReleased records that the claim's node was released to the kube-scheduler with its pods
// nominated to it. From then on a pod of the claim still pending can be rejected or stalled. A
// release also counts as a bind for the rejection grace: nodes are released one round at a time,
// and after each the scheduler has the new node's pods to work through before it comes back to
// pods of nodes released earlier.
func (n *Nominations) MarkReleased(claim string, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.released[claim] = now
	if now.After(n.lastBind) {
		n.lastBind = now
	}
}

// IsReleased reports whether MarkReleased was recorded for the claim.
func (n *Nominations) IsReleased(claim string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.released[claim]
	return ok
}

// Written records the resourceVersion our nominatedNodeName patch gave the pod.
func (n *Nominations) Written(pod types.UID, resourceVersion string) {
	rv, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.written[pod] = rv
}

// WrittenSince reports whether our nomination patch left the pod at a resourceVersion newer than
// resourceVersion: a cached copy that old does not show the nomination yet.
func (n *Nominations) WrittenSince(pod types.UID, resourceVersion string) bool {
	rv, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	written, ok := n.written[pod]
	return ok && written > rv
}

// IsRejection reports whether a pod seen in this state is a new rejection: it is nominated to a
// released claim, not already rejected, and seen in a version newer than our nomination still
// pending and either without a nominated node or marked unschedulable. (The scheduler clears the
// field when it cannot place a pod, except when its preemption step finds no candidates, which
// leaves the field as it was.) The rejection is often transient (topology spread allows the planned
// node again once other pods land), so the nomination keeps counting until it expires.
func (n *Nominations) IsRejection(pod types.UID, nominatedNodeName, resourceVersion string, unschedulable bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	claim, ok := n.byPod[pod]
	if _, released := n.released[claim]; !ok || !released || (nominatedNodeName != "" && !unschedulable) {
		return false
	}
	if _, seen := n.rejected[pod]; seen {
		return false
	}
	rv, err := strconv.ParseInt(resourceVersion, 10, 64)
	if written, ok := n.written[pod]; !ok || err != nil || rv <= written {
		return false // an event from before our nomination
	}
	return true
}

// IsStalled reports whether a pod nominated to a released claim, not rejected yet, is still pending
// although grace has passed since its claim's release and since a nominee last bound: the
// kube-scheduler has gone quiet without placing it, and without a write IsRejection would see (a
// failed attempt whose status and nomination did not change).
//
// While nominees keep binding (all of a large scale-up) no pod is stalled, and that is answered
// before any lookup: the stall watch asks for every pending pod each tick, and its three map
// lookups per pod were 2 % of the manager's CPU at 20,000 pods (make bench-scale), growing with the
// pending pods times the ticks.
func (n *Nominations) IsStalled(pod types.UID, now time.Time, grace time.Duration) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if now.Sub(n.lastBind) < grace {
		return false // orLastBind(releasedAt) is at least lastBind
	}
	claim, ok := n.byPod[pod]
	if !ok {
		return false
	}
	releasedAt, released := n.released[claim]
	if _, seen := n.rejected[pod]; !released || seen {
		return false
	}
	return now.Sub(n.orLastBind(releasedAt)) >= grace
}

// MarkRejected records that the scheduler turned the nominated pod away at now; it returns false,
// and changes nothing, if the pod is not nominated or its rejection was already recorded.
func (n *Nominations) MarkRejected(pod types.UID, now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.byPod[pod]; !ok {
		return false
	}
	if _, seen := n.rejected[pod]; seen {
		return false
	}
	n.rejected[pod] = now
	return true
}

// StartRenomination is true the first time it is asked for a pod: the caller writes the pod's
// nomination once more, since the kube-scheduler clears it on any failed attempt, including one
// made just before the node was released.
func (n *Nominations) StartRenomination(pod types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.renominated[pod] {
		return false
	}
	n.renominated[pod] = true
	return true
}

// Renominated records that the rejected pod's nomination was written again at resourceVersion: the
// rejection is void, and the next one counts anew.
func (n *Nominations) Renominated(pod types.UID, resourceVersion string) {
	n.Written(pod, resourceVersion)
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.rejected, pod)
}

// ExpiresIn returns how long until the rejected pod's nomination expires (zero or less: it has), and
// false when the pod is not a rejected nominee. A rejection counts from when it was seen or from the
// last time a nominated pod bound, whichever is later: while the kube-scheduler is still working
// through a released batch it may not have come back to the pod yet.
func (n *Nominations) ExpiresIn(pod types.UID, now time.Time, grace time.Duration) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.expiresInLocked(pod, now, grace)
}

func (n *Nominations) expiresInLocked(pod types.UID, now time.Time, grace time.Duration) (time.Duration, bool) {
	at, ok := n.rejected[pod]
	if !ok {
		return 0, false
	}
	return n.orLastBind(at).Add(grace).Sub(now), true
}

// orLastBind is t, or the last time a nominee bound if that is later: until then the kube-scheduler
// was still working through a released batch.
func (n *Nominations) orLastBind(t time.Time) time.Time {
	if n.lastBind.After(t) {
		return n.lastBind
	}
	return t
}

// Sweep drops, at now, the nominations whose rejection expired (their pods count as turned away
// until they bind or go) and every nomination to the stale claims but those a reservation holds
// room on. It returns the pods whose nomination expired.
func (n *Nominations) Sweep(now time.Time, grace time.Duration, staleClaims []string) []types.UID {
	n.mu.Lock()
	defer n.mu.Unlock()
	var expired []types.UID
	for pod := range n.rejected {
		if left, _ := n.expiresInLocked(pod, now, grace); left <= 0 {
			n.forgetLocked(pod)
			n.turned[pod] = true
			expired = append(expired, pod)
		}
	}
	for _, claim := range staleClaims {
		if !n.reservedLocked(claim) {
			n.forgetClaimLocked(claim)
		}
	}
	return expired
}

// Turned reports whether the pod's nomination expired after the scheduler turned it away: its
// status.nominatedNodeName, if still set, is stale.
func (n *Nominations) Turned(pod types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.turned[pod]
}

// Bound drops the nomination of a pod that was bound, noting when a nominee last bound.
func (n *Nominations) Bound(pod types.UID, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.byPod[pod]; ok {
		n.lastBind = now
	}
	n.forgetLocked(pod)
}

// ForgetPod drops the pod's nomination, and frees the reservation slot it held (it was deleted).
func (n *Nominations) ForgetPod(pod types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.forgetLocked(pod)
	n.unholdLocked(pod)
	delete(n.moved, pod)
}

// forgetLocked drops everything known about the pod.
func (n *Nominations) forgetLocked(pod types.UID) {
	delete(n.written, pod)
	delete(n.rejected, pod)
	delete(n.renominated, pod)
	delete(n.turned, pod)
	if c, ok := n.byPod[pod]; ok {
		delete(n.byClaim[c], pod)
		if len(n.byClaim[c]) == 0 {
			delete(n.byClaim, c)
		}
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
