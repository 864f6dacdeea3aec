package provisioning

import (
	"context"

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
