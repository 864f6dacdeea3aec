package disruption

import (
	"fmt"

	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/solver"
)

// Reserver holds room for the pods an executing command evicts (controllers/nomination).
type Reserver interface {
	Reserve(nomination.Reservation)
}

// reserve holds, as the command executes, the room its re-simulation planned for the pods of its
// nodes (placements, on the nodes it keeps and its replacements), through the drain: each pod counts
// on its planned node while it drains, and its re-creation is nominated there, so the provisioner
// does not buy capacity the plan already has.
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
	drained := make([]string, 0, len(cmd.targets))
	for _, t := range cmd.targets {
		drained = append(drained, t.claim)
	}
	c.reservations.Reserve(nomination.Reservation{
		Command:      fmt.Sprintf("%s/%d", drained[0], cmd.started.UnixNano()),
		Drained:      drained,
		Slots:        nomination.SlotsOf(placements, claimOfNode),
		Replacements: len(cmd.replacements),
	})
}
