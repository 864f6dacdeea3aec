package nodeclaim

import "sigs.k8s.io/controller-runtime/pkg/client"

// Test hooks: the lifecycle queue's event handlers.
var ClaimEvents = claimEvents

func (c *Controller) NodeEvents() any { return c.nodeEvents() }

// SetLive replaces the apiserver reader Register would set.
func (c *Controller) SetLive(r client.Reader) { c.live = r }
