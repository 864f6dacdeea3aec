package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// stillFits re-plans the command against the cluster as it is now, with the planner that made it:
// the pods of the command's nodes must all find room on the other nodes (its initialized
// replacements included) without launching anything, after the room the displaced pods need. The
// kube-scheduler may have filled the planned room during the validation delay; executing anyway
// would leave the evicted pods Pending until a new node boots. It returns why the command no longer
// holds, or "" and where the re-simulation placed the command's pods, with the replacements that
// placement does without (unneededReplacements).
func (c *Controller) stillFits(ctx context.Context, cl *cluster, cmd *command) (string, []solver.ExistingPlacement, []string, error) {
	in, err := c.snapshot(ctx)
	if err != nil {
		return "", nil, nil, fmt.Errorf("re-simulating %s command: %w", cmd.reason, err)
	}
	// The pods move after it executes, when the marks are the look-ahead's and the steering of this
	// command's own drain, which leaves its destinations open (steer.go).
	in.Nodes = markRemovalsInSnapshot(in.Nodes, c.lastMarks)
	in = disruptionpolicy.Prepare(in, disruptionpolicy.Cluster{Displaced: displacedPods(cl, in.Pods, c.inFlightNodes(cmd), in),
		Guardrails: cl.guardrails, NamespaceLabels: cl.nsLabels})
	targets := map[string]bool{}
	for _, t := range cmd.targets {
		targets[t.node] = true
	}
	sub := solver.Input{NodePools: in.NodePools, DaemonSets: in.DaemonSets, VolumeZones: in.VolumeZones, VolumeDrivers: in.VolumeDrivers}
	for _, n := range in.Nodes {
		if !targets[n.Name] {
			sub.Nodes = append(sub.Nodes, n)
			continue
		}
		for _, p := range n.Pods {
			if movable(p) && p.DeletionTimestamp.IsZero() {
				sub.Pods = append(sub.Pods, p)
			}
		}
	}
	if len(sub.Pods) == 0 {
		return "", nil, nil, nil
	}
	if placements, ok := fitsAsPlanned(cl, cmd, sub); ok {
		return "", placements, nil, nil
	}
	r := solver.Solve(sub)
	if len(r.Unschedulable) > 0 {
		u := r.Unschedulable[0]
		return fmt.Sprintf("re-simulated before deleting: pod %s/%s no longer fits anywhere (%s)", u.Pod.Namespace, u.Pod.Name, u.Reason), nil, nil, nil
	}
	if len(r.NewNodeClaims) > 0 {
		pods := 0
		var named []string
		for _, nc := range r.NewNodeClaims {
			pods += len(nc.Pods)
			for _, p := range nc.Pods {
				if len(named) < 3 {
					named = append(named, fmt.Sprintf("%s/%s bound to %q", p.Namespace, p.Name, p.Spec.NodeName))
				}
			}
		}
		bound := len(podUIDs(cl.podsByNode[cmd.targets[0].node]))
		return fmt.Sprintf("re-simulated before deleting: %d of its %d pod(s) no longer fit on the remaining nodes and its replacements (the room was taken since the plan; %d pod(s) bound to %s; e.g. %s)",
			pods, len(sub.Pods), bound, cmd.targets[0].node, strings.Join(named, ", ")), nil, nil, nil
	}
	var unneeded []string
	if !cmd.keepReplacements && len(cmd.idleReplacements(cl, sub.Nodes)) > 0 {
		r.ExistingPlacements, unneeded = unneededReplacements(cl, cmd, sub, r.ExistingPlacements, c.heldNodes(cl))
	}
	return "", r.ExistingPlacements, unneeded, nil
}

// unneededReplacements finds the command's replacements its pods no longer need. The plan was made
// against the cluster as it was; by the time the replacements are up, room may have freed (a
// scale-down still deleting pods when the command was planned): the pods then fit without some of
// them. Kept, such a replacement would receive moved pods and be consolidated away by a later
// command, evicting them a second time (the scale-down bench's command 1 replaced a node by two, and
// its sixth deleted one of the two). A replacement may go when no pod counts on it and the
// command's pods all fit, without launching anything, on the nodes that stay *and are not marked
// for removal* (PlannedRemovalTaint: a pod moved there would move again) *nor held by another
// command* (held: heldNodes — another command's replacements, planned destinations and reserved
// room; the command's own destinations stay usable) plus the other replacements. Without the
// second condition two commands in flight each dropped their replacements onto the other's (crash
// trial, 10 → 2 nodes at 1.23 × the plan). Replacements are tried in the order the command
// launched them; the placement returned is the one without the replacements dropped.
func unneededReplacements(cl *cluster, cmd *command, sub solver.Input, placements []solver.ExistingPlacement, held map[string]bool) ([]solver.ExistingPlacement, []string) {
	var unneeded, ownNodes []string
	for _, name := range cmd.replacements {
		ownNodes = append(ownNodes, replacementNode(cl, name))
	}
	dropped := map[string]bool{}
	for _, name := range cmd.idleReplacements(cl, sub.Nodes) {
		dropped[replacementNode(cl, name)] = true
		trial := sub
		trial.Nodes = nil
		for _, n := range sub.Nodes {
			own := cmd.destinations[n.Name] || slices.Contains(ownNodes, n.Name)
			if !dropped[n.Name] && (own || !held[n.Name]) &&
				!slices.ContainsFunc(n.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&disruptionpolicy.PlannedRemovalTaint) }) {
				trial.Nodes = append(trial.Nodes, n)
			}
		}
		r := solver.Solve(trial)
		if len(r.Unschedulable) > 0 || len(r.NewNodeClaims) > 0 {
			delete(dropped, replacementNode(cl, name))
			continue
		}
		unneeded, placements = append(unneeded, name), r.ExistingPlacements
	}
	return placements, unneeded
}

// idleReplacements lists the command's replacements whose nodes are in nodes with no pod counting on
// them (bound or nominated).
func (cmd *command) idleReplacements(cl *cluster, nodes []solver.ExistingNode) []string {
	var out []string
	for _, name := range cmd.replacements {
		node := replacementNode(cl, name)
		if node == "" {
			continue
		}
		i := slices.IndexFunc(nodes, func(n solver.ExistingNode) bool { return n.Name == node })
		if i >= 0 && !slices.ContainsFunc(nodes[i].Pods, movable) && len(podUIDs(cl.podsByNode[node])) == 0 {
			out = append(out, name)
		}
	}
	return out
}

// replacementNode is the node of a replacement claim, "" while it has none.
func replacementNode(cl *cluster, claim string) string {
	if nc := claimNamed(cl, claim); nc != nil {
		return nc.Status.NodeName
	}
	return ""
}

// fitsAsPlanned places a reordered command's pods (asPlanned) where it planned them, each group
// alone on its node as that node is now; it reports false when the command has no such plan, a pod
// is in no group or a group no longer fits (the re-simulation then places them anywhere). Placed
// anywhere, the pods would fill one replacement and leave another, sized for a later delete's
// pods, empty.
func fitsAsPlanned(cl *cluster, cmd *command, sub solver.Input) ([]solver.ExistingPlacement, bool) {
	if len(cmd.asPlanned) == 0 {
		return nil, false
	}
	// One node at a time sees no topology beyond it: pods that spread or (anti-)attract are placed
	// by the whole re-simulation.
	if slices.ContainsFunc(sub.Pods, func(p *corev1.Pod) bool {
		return len(p.Spec.TopologySpreadConstraints) > 0 || (p.Spec.Affinity != nil && (p.Spec.Affinity.PodAffinity != nil || p.Spec.Affinity.PodAntiAffinity != nil))
	}) {
		return nil, false
	}
	var out []solver.ExistingPlacement
	placed := 0
	for _, g := range cmd.asPlanned {
		name := g.node
		if g.replacement >= 0 {
			if g.replacement >= len(cmd.replacements) {
				return nil, false
			}
			name = replacementNode(cl, cmd.replacements[g.replacement])
		}
		i := slices.IndexFunc(sub.Nodes, func(n solver.ExistingNode) bool { return n.Name == name })
		pods := slices.DeleteFunc(slices.Clone(sub.Pods), func(p *corev1.Pod) bool { return !g.pods[p.UID] })
		if len(pods) == 0 {
			continue
		}
		if i < 0 {
			return nil, false
		}
		one := sub
		one.Nodes, one.Pods = sub.Nodes[i:i+1], pods
		r := solver.Solve(one)
		if len(r.Unschedulable) > 0 || len(r.NewNodeClaims) > 0 {
			return nil, false
		}
		placed += len(pods)
		out = append(out, r.ExistingPlacements...)
	}
	if placed != len(sub.Pods) {
		return nil, false
	}
	return out, true
}
