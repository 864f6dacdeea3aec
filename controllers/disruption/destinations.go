package disruption

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// Destinations of moves are kept off the next commands.
//
// A command moves its pods onto the nodes that stay. If the next command takes one of those nodes,
// the pods it receives are evicted a second time, and the room the first command reserved there is
// gone: the evicted pods find no room and the provisioner buys a node for them. Karpenter keeps a
// node whose room the provisioner nominated pods to out of disruption; Joist does the same for the
// room a command holds and goes one step further for the pods already moved:
//
//   - hard: a node that is a planned destination of a command in flight, or on which an executing
//     command holds room for the pods it evicts (a reservation, controllers/nomination), is never a
//     candidate while that lasts;
//   - soft: a node hosting a moved replica (disruptionpolicy.Moves) is a candidate only when nothing
//     else can be consolidated — the loop first finishes the moves that touch no moved pod — and
//     only for a command worth a second move (worthASecondMove); a move is remembered freshHold.

// destinationGrace is how long after the last node of an executing command is gone its reservation's
// destinations stay held: the drain evicted every pod before the node went, and the re-created pods
// bind within seconds. The reservation itself lasts NominationTTL longer (a late pod still finds its
// room); holding its nodes out of disruption that long delayed the next command by half a minute.
const destinationGrace = 5 * time.Second

// ownReservation is where a command this process executed reserved room: its drained claims and the
// claims of its slots.
type ownReservation struct {
	drained []string
	dests   map[string]bool
	goneAt  time.Time
	// evicted are the movable pods of its nodes when it executed: what steering keeps off the nodes
	// the plan does not put them on (withSteering).
	evicted []*corev1.Pod
}

// heldNodes are the nodes no command may take now: destinations of commands in flight (the nodes
// their plans put pods on, and their replacements); destinations of this process's executing
// commands while one of their nodes drains, and destinationGrace after; and nodes a reservation this
// process does not know the command of (restored after a restart) holds room on.
func (c *Controller) heldNodes(cl *cluster) map[string]bool {
	out := map[string]bool{}
	nodeOfClaim := map[string]string{}
	exists := map[string]bool{}
	for _, nc := range cl.claims {
		exists[nc.Name] = true
		if nc.Status.NodeName != "" {
			nodeOfClaim[nc.Name] = nc.Status.NodeName
		}
	}
	now := c.clock.Now()
	c.mu.Lock()
	known := map[string]bool{}
	for id, r := range c.ownReserved {
		draining := false
		for _, d := range r.drained {
			draining = draining || exists[d]
		}
		switch {
		case draining:
			r.goneAt = time.Time{}
		case r.goneAt.IsZero():
			r.goneAt = now
		}
		held := draining || now.Sub(r.goneAt) < destinationGrace
		stillReserved := false
		for d := range r.dests {
			known[d] = true
			if held {
				out[nodeOfClaim[d]] = true
			}
			stillReserved = stillReserved || (c.reservations != nil && c.reservations.Reserved(d))
		}
		if !held && !stillReserved {
			delete(c.ownReserved, id)
		}
	}
	for _, cmd := range c.commands {
		for n := range cmd.destinations {
			out[n] = true
		}
		for _, r := range cmd.replacements {
			if n := nodeOfClaim[r]; n != "" {
				out[n] = true
			}
		}
	}
	c.mu.Unlock()
	if c.reservations != nil {
		for claim, node := range nodeOfClaim {
			if !known[claim] && c.reservations.Reserved(claim) {
				out[node] = true
			}
		}
	}
	delete(out, "")
	return out
}

// recordMoves remembers the workloads whose pods an executing command evicts (from its nodes' pods
// in this pass's read), and its replacements (freshReplacements).
func (c *Controller) recordMoves(cl *cluster, cmd *command, executed time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range cmd.targets {
		c.moves.Record(disruptionpolicy.Owners(cl.podsByNode[t.node]), executed)
	}
	for _, r := range cmd.replacements {
		c.movedOnto[r] = executed
	}
}

// freshHold is how long after its command executed a replacement counts as fresh
// (freshReplacements). Not dropped with the memory of moves: the pass that finds nothing else to do
// drops that memory, and the next pass would then take the replacement as any node.
const freshHold = 10 * time.Minute

// freshReplacements are the claims commands launched as replacements: of the commands in flight,
// and of the commands executed less than freshHold ago. A replacement is sized
// by the plan that launched it for the pods that command and the next ones move onto it; replacing
// or deleting it again evicts those pods a second time. The scale-down bench's repeats came from
// there (session 13's run 4: 40 of 43, a replacement of command 1 replaced by the look-ahead's
// second reorder; the base's run of session 14: all 71, one replacement replaced by a reorder, one
// deleted by the last command). So the look-ahead does not plan them away while any other node can
// be consolidated, the reorder never runs a replace of one, and a command takes one only when no
// other node gives a command and it is worth a second move (worthASecondMove).
func (c *Controller) freshReplacements(now time.Time) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for r, executed := range c.movedOnto {
		if now.Sub(executed) < freshHold {
			out[r] = true
		}
	}
	for _, cmd := range c.commands {
		for _, r := range cmd.replacements {
			out[r] = true
		}
	}
	return out
}

// hostsMovedReplica reports whether the member runs a pod a command already moved.
func (c *Controller) hostsMovedReplica(m *member) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.moves.MovedReplica(m.pods) != nil
}

// forgetOldMoves drops the memory of moves older than freshHold, as fresh replacements stop being
// fresh then. The memory used to be dropped whenever a pass found nothing to do; but a command taking
// a node that hosts a moved replica must be worth a second move (worthASecondMove), so a pass that
// refused one finds nothing to do, and had it forgotten the moves the next pass would take the node
// for any saving (session 16's first bench run: a node hosting 3 pods a replace had just moved onto
// it, deleted last for 0.8 % of the cluster's $/h).
func (c *Controller) forgetOldMoves(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.moves.ForgetBefore(now.Add(-freshHold))
}

// resimBackoff is how long the nodes of a command its re-simulation abandoned are left out of new
// commands. The plan that formed it is usually formed again at once (the same snapshot, the same
// planner) and fails the same way — e.g. when its replacements came up with less allocatable than
// the catalog promised — each time launching and deleting its replacements.
const resimBackoff = time.Minute

// backOff keeps the command's nodes out of new commands for resimBackoff.
func (c *Controller) backOff(cmd *command, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range cmd.targets {
		c.backoff[t.node] = now.Add(resimBackoff)
	}
}

// backedOff reports whether the node is still left out after an abandoned command, forgetting the
// nodes whose back-off is over.
func (c *Controller) backedOff(node string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.backoff[node]
	if ok && !now.Before(until) {
		delete(c.backoff, node)
		return false
	}
	return ok
}

// worthASecondMove reports whether a consolidation command may take the nodes it takes whose pods
// were moved a moment ago (fresh: fresh replacements and nodes hosting a moved replica): it takes
// none, it only deletes empty nodes, or it saves at least minSavings (5 % by default) of the
// cluster's $/h (costBefore), not only of its own nodes' price as every command must. Their pods were moved there
// a moment ago; moving them again to save a cent is the churn the target "each pod evicted at most
// once" counts (session 14's first bench run: a fresh replacement deleted last for $0.0114/h of
// $1.37/h, evicting the 5 pods it had received).
func worthASecondMove(cmd solver.Command, fresh map[string]bool, costBefore, minSavings float64) bool {
	if cmd.Reason == v1.DisruptionReasonEmpty || !slices.ContainsFunc(cmd.Delete, func(n string) bool { return fresh[n] }) {
		return true // an empty node moves no pod
	}
	return cmd.SavingsPerHour >= minSavings*costBefore
}
