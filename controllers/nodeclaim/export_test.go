package nodeclaim

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// Test hooks: the lifecycle queue's event handlers.
var ClaimEvents = claimEvents

func (c *Controller) NodeEvents() any { return c.nodeEvents() }

// SetLive replaces the apiserver reader Register would set.
func (c *Controller) SetLive(r client.Reader) { c.live = r }

// LaunchRecords is how many launch results the lifecycle remembers.
func (c *Controller) LaunchRecords() int { return c.launched.Len() }

// LaunchRecord is the launch result remembered for the claim uid, or nil.
func (c *Controller) LaunchRecord(uid types.UID) *v1.NodeClaim {
	if rec, ok := c.launched.Get(uid); ok {
		return rec.(*v1.NodeClaim)
	}
	return nil
}

// Persist is the reconcile's final write of nc's changes from stored.
func (c *Controller) Persist(ctx context.Context, stored, nc *v1.NodeClaim) error {
	return c.persist(ctx, stored, nc)
}

// SetInformers replaces the cache Register would set.
func (c *Controller) SetInformers(i ctrlcache.Informers) { c.informers = i }
