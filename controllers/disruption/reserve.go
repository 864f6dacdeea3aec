package disruption

import (
	"context"
	"encoding/json"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/solver"
)

// Reserver holds room for the pods an executing command evicts (controllers/nomination).
type Reserver interface {
	Reserve(nomination.Reservation)
	// Reserved reports whether a reservation in force holds room on the claim.
	Reserved(claim string) bool
}

// reserve holds, as the command executes, the room its re-simulation planned for the pods of its
// nodes (placements, on the nodes it keeps and its replacements), through the drain: each pod counts
// on its planned node while it drains, and its re-creation is nominated there, so the provisioner
// does not buy capacity the plan already has. The slots are kept on the command (cmd.reserved) to
// be recorded on its claims.
func (c *Controller) reserve(cl *cluster, cmd *command, placements []solver.ExistingPlacement) {
	if c.reservations == nil {
		return
	}
	claimOfNode := map[string]string{}
	for _, nc := range cl.claims {
		if nc.Status.NodeName != "" && nc.DeletionTimestamp.IsZero() {
			claimOfNode[nc.Status.NodeName] = nc.Name
		}
	}
	cmd.reserved = nomination.SlotsOf(placements, claimOfNode)
	c.restored[cmd.id()] = true // held by this process: nothing to restore
	if len(cmd.reserved) > 0 {
		r := &ownReservation{drained: cmd.claims(), dests: map[string]bool{}}
		for _, sl := range cmd.reserved {
			r.dests[sl.Claim] = true
		}
		for _, t := range cmd.targets {
			for _, p := range cl.podsByNode[t.node] {
				if movable(p) && p.DeletionTimestamp.IsZero() {
					r.evicted = append(r.evicted, p)
				}
			}
		}
		c.mu.Lock()
		c.ownReserved[cmd.id()] = r
		c.mu.Unlock()
	}
	c.reservations.Reserve(nomination.Reservation{Command: cmd.id(), Drained: cmd.claims(), Slots: cmd.reserved, Replacements: len(cmd.replacements)})
}

// claims are the names of the command's target NodeClaims, in target order.
func (cmd *command) claims() []string {
	out := make([]string, len(cmd.targets))
	for i, t := range cmd.targets {
		out[i] = t.claim
	}
	return out
}

// restoreReservations holds again, in a new leader, the room of commands a previous leader executed
// and whose claims still drain: their records carry the reserved slots (written right before the
// claims were deleted). Without it the pods such a drain evicts after the restart find their planned
// room unheld, and the provisioner may buy nodes for them. Each command is restored once per process;
// its planned replacements were counted by the process that executed it.
func (c *Controller) restoreReservations(ctx context.Context, cl *cluster) {
	if c.reservations == nil {
		return
	}
	byID := map[string]map[string]commandRecord{}
	draining := map[string]bool{}
	for _, nc := range cl.claims {
		raw := nc.Annotations[v1.DisruptionCommandAnnotationKey]
		if raw == "" || nc.DeletionTimestamp.IsZero() {
			continue
		}
		var r commandRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil || r.ID == "" || len(r.Reserved) == 0 {
			continue
		}
		draining[r.ID] = true
		if c.restored[r.ID] {
			continue
		}
		if byID[r.ID] == nil {
			byID[r.ID] = map[string]commandRecord{}
		}
		byID[r.ID][nc.Name] = r
	}
	for id := range c.restored {
		if !draining[id] {
			delete(c.restored, id) // its claims are gone
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		var slots []state.Slot
		var drained []string
		for _, r := range byID[id] {
			drained = r.Targets
			for _, sl := range r.Reserved {
				slots = append(slots, state.Slot{Pod: sl.Pod, Owner: sl.Owner, Claim: sl.Claim})
			}
		}
		c.restored[id] = true
		c.reservations.Reserve(nomination.Reservation{Command: id, Drained: drained, Slots: slots})
		log.FromContext(ctx).Info("restored the reservation of an executing disruption command of a previous leader", "command", id, "slots", len(slots))
	}
}
