package provisioning

import (
	"context"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
	"github.com/joist-dev/joist/solver"
)

// ClusterSnapshot is the solver input the provisioner would build now, through the one snapshot
// builder (snapshot.Build) over the same cache and nominations: Ready NodePools with their instance
// types and remaining limits, existing nodes and in-flight NodeClaims with their pods (nominated ones
// included), DaemonSets, and the pending pods. The disruption controller plans on it.
func (p *Provisioner) ClusterSnapshot(ctx context.Context) (solver.Input, error) {
	s, err := p.snapshot(ctx)
	if err != nil {
		return solver.Input{}, err
	}
	return s.Input, nil
}

// NodeClaimFor builds the NodeClaim that launches plan from np's template, as provisioning does. The
// label keys instance types define are read from the plan's options: a key only other types of the
// catalog define cannot be demanded by requirements these options satisfy.
func NodeClaimFor(np *v1.NodePool, plan *solver.NodeClaimPlan) *v1.NodeClaim {
	return nodeClaimFor(np, plan, requirements.Known(plan.InstanceTypeOptions))
}
