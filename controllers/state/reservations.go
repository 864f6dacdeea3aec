package state

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Slot is room a disruption command planned for one pod of a node it drains: the pod's re-creation
// (a new pod of the same controller, Owner) is to land on the destination claim Claim.
type Slot struct {
	Owner types.UID
	Claim string
}

// reservation is the room one executing disruption command holds for the pods it evicts.
type reservation struct {
	// open lists, per owner, the destination claims no re-created pod has taken yet.
	open map[types.UID][]string
	// claims counts the slots (open or taken) per destination claim.
	claims map[string]int
	// targets are the claims the command drains; the reservation lasts while one of them exists.
	targets   []string
	goneSince time.Time
	taken     int
}

// Reserve records the room command set aside for the re-created pods of the claims it drains
// (targets), and marks the destination claims released: their nodes take pods already, so a
// re-created pod nominated there and turned away is handled like any rejected nominee. A command
// reserved twice keeps its first reservation.
func (n *Nominations) Reserve(command string, targets []string, slots []Slot, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.reservations[command]; ok || len(slots) == 0 {
		return
	}
	r := &reservation{open: map[types.UID][]string{}, claims: map[string]int{}, targets: append([]string(nil), targets...)}
	for _, s := range slots {
		r.open[s.Owner] = append(r.open[s.Owner], s.Claim)
		r.claims[s.Claim]++
		if _, ok := n.released[s.Claim]; !ok {
			n.released[s.Claim] = now
		}
	}
	n.reservations[command] = r
}

// TakeReservation nominates a pending pod of owner that Joist has not nominated yet to the claim a
// reservation holds for owner's pods, using up that slot; it returns the claim, or false when no
// reservation has an open slot for owner.
func (n *Nominations) TakeReservation(pod, owner types.UID) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.byPod[pod]; ok || n.turned[pod] {
		return "", false
	}
	for _, r := range n.reservations {
		claims := r.open[owner]
		if len(claims) == 0 {
			continue
		}
		claim := claims[len(claims)-1]
		if len(claims) == 1 {
			delete(r.open, owner)
		} else {
			r.open[owner] = claims[:len(claims)-1]
		}
		r.taken++
		n.nominateLocked(claim, pod)
		return claim, true
	}
	return "", false
}

// HasReservationFor reports whether a reservation in force was made for pods of owner, taken or not.
func (n *Nominations) HasReservationFor(owner types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, r := range n.reservations {
		if _, ok := r.open[owner]; ok {
			return true
		}
	}
	return false
}

// IsReserved reports whether a reservation in force holds room on claim: its nominations keep
// counting, however long ago the claim initialized.
func (n *Nominations) IsReserved(claim string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reservedLocked(claim)
}

func (n *Nominations) reservedLocked(claim string) bool {
	for _, r := range n.reservations {
		if r.claims[claim] > 0 {
			return true
		}
	}
	return false
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
		slots := 0
		for _, c := range r.claims {
			slots += c
		}
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
		ended = append(ended, EndedReservation{Command: cmd, Slots: slots, Taken: r.taken})
	}
	return ended
}
