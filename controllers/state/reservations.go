package state

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Slot is room a disruption command planned for one pod of a node it drains: the pod (Pod, whose
// controller is Owner) moves to the destination claim Claim — in fact its re-creation, a new pod of
// the same controller, once the drain evicts it.
type Slot struct {
	Pod   types.UID
	Owner types.UID
	Claim string
}

// slot is a Slot in force: held by the drained pod until it is gone, then open until a re-created
// pod of its owner takes it.
type slot struct {
	Slot
	held, taken bool
}

// reservation is the room one executing disruption command holds for the pods it evicts.
type reservation struct {
	slots []*slot
	// targets are the claims the command drains; the reservation lasts while one of them exists.
	targets   []string
	goneSince time.Time
}

// Reserve records the room command set aside for the pods of the claims it drains (targets): until
// a drained pod is gone it counts on its slot's claim (HeldClaim); then the first pending pod of its
// owner takes the slot (TakeReservation). The destination claims are marked released: their nodes
// take pods already, so a re-created pod nominated there and turned away is handled like any
// rejected nominee. A command reserved twice keeps its first reservation.
//
// It returns how many of the slots' pods an earlier command already moved (they took a reservation):
// each of those is evicted a second time.
func (n *Nominations) Reserve(command string, targets []string, slots []Slot, now time.Time) (movedBefore int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.reservations[command]; ok || len(slots) == 0 {
		return 0
	}
	r := &reservation{targets: append([]string(nil), targets...)}
	for _, s := range slots {
		if n.moved[s.Pod] {
			movedBefore++
		}
		sl := &slot{Slot: s, held: s.Pod != ""}
		r.slots = append(r.slots, sl)
		n.reservedClaims[s.Claim]++
		n.reservedOwners[s.Owner]++
		if sl.held {
			n.held[s.Pod] = sl
		}
		if _, ok := n.released[s.Claim]; !ok {
			n.released[s.Claim] = now
		}
	}
	n.reservations[command] = r
	return movedBefore
}

// HeldClaim returns the claim a reservation holds room on for a drained pod still present.
func (n *Nominations) HeldClaim(pod types.UID) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sl := n.held[pod]; sl != nil {
		return sl.Claim, true
	}
	return "", false
}

// TakeReservation nominates a pending pod of owner that Joist has not nominated yet to the claim a
// reservation holds for owner's pods, using up that slot (the drained pod it stands in for no longer
// counts there); it returns the claim, or false when no reservation has an open slot for owner.
func (n *Nominations) TakeReservation(pod, owner types.UID) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.byPod[pod]; ok || n.turned[pod] || n.reservedOwners[owner] == 0 {
		return "", false
	}
	var pick *slot
	for _, r := range n.reservations {
		for _, sl := range r.slots {
			// Prefer a slot whose drained pod is gone: that one is being re-created.
			if sl.Owner == owner && !sl.taken && (pick == nil || pick.held && !sl.held) {
				pick = sl
			}
		}
	}
	if pick == nil {
		return "", false
	}
	pick.taken = true
	n.moved[pod] = true
	if pick.held {
		pick.held = false
		delete(n.held, pick.Pod)
	}
	n.nominateLocked(pick.Claim, pod)
	return pick.Claim, true
}

// unholdLocked frees the slot a drained pod held: the pod is gone.
func (n *Nominations) unholdLocked(pod types.UID) {
	if sl := n.held[pod]; sl != nil {
		sl.held = false
		delete(n.held, pod)
	}
}

// HasReservationFor reports whether a reservation in force was made for pods of owner, taken or not.
func (n *Nominations) HasReservationFor(owner types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reservedOwners[owner] > 0
}

// IsReserved reports whether a reservation in force holds room on claim: its nominations keep
// counting, however long ago the claim initialized.
func (n *Nominations) IsReserved(claim string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reservedLocked(claim)
}

func (n *Nominations) reservedLocked(claim string) bool {
	return n.reservedClaims[claim] > 0
}

// EndedReservation is what a reservation achieved: of Slots pods planned to move, Taken re-created
// pods landed in it.
type EndedReservation struct {
	Command      string
	Slots, Taken int
}

// EndReservations ends, at now, the reservations whose drained claims have all been gone (exists
// false) for ttl, and returns them. Until then a pod evicted late in a slow drain still finds its
// room, and the pods that took their slots keep counting on their claims while they bind.
func (n *Nominations) EndReservations(now time.Time, ttl time.Duration, exists func(claim string) bool) []EndedReservation {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ended []EndedReservation
	for cmd, r := range n.reservations {
		gone := true
		for _, t := range r.targets {
			gone = gone && !exists(t)
		}
		if !gone {
			r.goneSince = time.Time{}
			continue
		}
		if r.goneSince.IsZero() {
			r.goneSince = now
		}
		if now.Sub(r.goneSince) < ttl {
			continue
		}
		delete(n.reservations, cmd)
		taken := 0
		for _, sl := range r.slots {
			if sl.taken {
				taken++
			}
			n.unholdLocked(sl.Pod)
			decrement(n.reservedClaims, sl.Claim)
			decrement(n.reservedOwners, sl.Owner)
		}
		ended = append(ended, EndedReservation{Command: cmd, Slots: len(r.slots), Taken: taken})
	}
	return ended
}

// decrement lowers m[k] by one, dropping the key at zero.
func decrement[K comparable](m map[K]int, k K) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}
