package disruption

import (
	"context"

	"github.com/joist-dev/joist/solver"
)

// Snapshotter builds the cluster snapshot the solver plans on. The provisioner implements it
// (provisioning.Provisioner.ClusterSnapshot, over the shared snapshot.Build), so consolidation sees
// exactly what provisioning sees, nominations of in-flight claims included.
type Snapshotter interface {
	ClusterSnapshot(ctx context.Context) (solver.Input, error)
}

// snapshot reads the cluster into a solver input.
func (c *Controller) snapshot(ctx context.Context) (solver.Input, error) {
	return c.snapshots.ClusterSnapshot(ctx)
}
