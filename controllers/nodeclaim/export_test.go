package nodeclaim

// Test hooks: the lifecycle queue's event handlers.
var ClaimEvents = claimEvents

func (c *Controller) NodeEvents() any { return c.nodeEvents() }
