package disruption

import (
	"context"
	"fmt"

	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// stillFits re-plans the command against the cluster as it is now, with the planner that made it:
// the pods of the command's nodes must all find room on the other nodes (its initialized
// replacements included) without launching anything, after the room the displaced pods need. The
// kube-scheduler may have filled the planned room during the validation delay; executing anyway
// would leave the evicted pods Pending until a new node boots. It returns why the command no longer
// holds, or "" and where the re-simulation placed the command's pods.
func (c *Controller) stillFits(ctx context.Context, cl *cluster, cmd *command) (string, []solver.ExistingPlacement, error) {
	in, err := c.snapshot(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("re-simulating %s command: %w", cmd.reason, err)
	}
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
		return "", nil, nil
	}
	r := solver.Solve(sub)
	if len(r.Unschedulable) > 0 {
		u := r.Unschedulable[0]
		return fmt.Sprintf("re-simulated before deleting: pod %s/%s no longer fits anywhere (%s)", u.Pod.Namespace, u.Pod.Name, u.Reason), nil, nil
	}
	if len(r.NewNodeClaims) > 0 {
		pods := 0
		for _, nc := range r.NewNodeClaims {
			pods += len(nc.Pods)
		}
		return fmt.Sprintf("re-simulated before deleting: %d of its %d pod(s) no longer fit on the remaining nodes and its replacements (the room was taken since the plan)",
			pods, len(sub.Pods)), nil, nil
	}
	return "", r.ExistingPlacements, nil
}
