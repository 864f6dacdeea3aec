package nomination

import (
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/solver"
)

// Reservation is the room an executing disruption command planned for the pods of the nodes it
// drains, on its replacements and on the nodes it keeps.
type Reservation struct {
	// Command names the command uniquely while it runs.
	Command string
	// Drained are the claims the command deletes; the reservation lasts while one of them exists
	// (their drain may be slow) and NominationTTL after.
	Drained []string
	// Slots are the destinations, one per pod that a workload re-creates once evicted.
	Slots []state.Slot
	// Replacements counts the NodeClaims the command launched.
	Replacements int
}

// Reserve holds the reservation's room: while a drained pod is still on its node it counts on its
// slot's claim, and once evicted, the first pending pod of its workload takes the slot and is
// nominated to the slot's claim, so the provisioner counts it there instead of buying a node for it.
func (c *Controller) Reserve(r Reservation) {
	again := c.store.Reserve(r.Command, r.Drained, r.Slots, c.clock.Now())
	reservedPods.Add(float64(len(r.Slots)))
	repeatedEvictions.Add(float64(again))
	countLaunches(r.Replacements, 0)
}

// Reserved reports whether a disruption command's reservation in force holds room on the claim.
func (c *Controller) Reserved(claim string) bool { return c.store.IsReserved(claim) }

// SlotsOf turns a plan's placements of the pods of drained nodes into reservation slots: a slot per
// placed pod that a controller re-creates, on the claim of its planned node (claimOfNode maps node
// names to claim names; a node without a claim takes no reservation).
func SlotsOf(placements []solver.ExistingPlacement, claimOfNode map[string]string) []state.Slot {
	var slots []state.Slot
	for _, pl := range placements {
		claim := claimOfNode[pl.Node]
		if claim == "" {
			continue
		}
		for _, pod := range pl.Pods {
			if owner := ownerOf(pod); owner != "" {
				slots = append(slots, state.Slot{Pod: pod.UID, Owner: owner, Claim: claim})
			}
		}
	}
	return slots
}
