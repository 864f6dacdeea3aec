package disruption

import (
	"context"

	"github.com/joist-dev/joist/solver"
)

// Snapshotter builds the cluster snapshot the solver plans on. Today the provisioner's builder
// (provisioning.Provisioner.ClusterSnapshot) implements it, so consolidation sees exactly what
// provisioning sees; it is the one place to swap for a shared snapshot package.
type Snapshotter interface {
	ClusterSnapshot(ctx context.Context) (solver.Input, error)
}

// snapshot reads the cluster into a solver input.
func (c *Controller) snapshot(ctx context.Context) (solver.Input, error) {
	return c.snapshots.ClusterSnapshot(ctx)
}
