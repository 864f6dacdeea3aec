package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// consolidate switches the sample pool to WhenEmptyOrUnderutilized, scales the workload down and
// waits until Joist has repacked the cluster, then prints $/h before and after.
func (d *demo) consolidate(ctx context.Context, replicas map[string]int32, want int) error {
	np := &v1.NodePool{}
	if err := d.env.Client.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
		return fmt.Errorf("getting nodepool general: %w", err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	if err := d.env.Client.Patch(ctx, np, patch); err != nil {
		return fmt.Errorf("patching nodepool general: %w", err)
	}
	if err := d.scale(ctx, replicas); err != nil {
		return err
	}
	before, err := d.snapshot(ctx)
	if err != nil {
		return err
	}
	say("scaled down to %d pods on %d nodes at $%.4f/h; the pool is now WhenEmptyOrUnderutilized: Joist plans the whole cluster and repacks it within the budget (10%% of nodes at a time)", want, before.nodes, before.costPerHour)
	// The loop acts once consolidateAfter (10s in the sample) has passed since a node's last pod event
	// and polls every 10s, and each command waits for its replacements and re-validates: a quiet spell
	// shorter than that would call the cluster consolidated before the first command starts.
	if err := d.watchUntil(ctx, 5*time.Minute, settled(consolidationQuiet, func(s snapshot) bool {
		return s.running == want && s.pending == 0 && s.disrupting == 0
	})); err != nil {
		return err
	}
	after, err := d.snapshot(ctx)
	if err != nil {
		return err
	}
	say("consolidated: %d → %d nodes, $%.4f/h → $%.4f/h", before.nodes, after.nodes, before.costPerHour, after.costPerHour)
	return nil
}

// driftRoll changes the NodeClass image: every node drifts and is replaced, one at a time.
func (d *demo) driftRoll(ctx context.Context, want int) error {
	class := &kwokv1alpha1.KWOKNodeClass{}
	if err := d.env.Client.Get(ctx, client.ObjectKey{Name: "default"}, class); err != nil {
		return fmt.Errorf("getting kwoknodeclass default: %w", err)
	}
	patch := client.MergeFrom(class.DeepCopy())
	class.Spec.ImageID = "kwok-image-v2"
	if err := d.env.Client.Patch(ctx, class, patch); err != nil {
		return fmt.Errorf("patching kwoknodeclass default: %w", err)
	}
	say("changed the KWOKNodeClass image to kwok-image-v2: every node is now Drifted and is replaced (replacement first, then drain)")
	err := d.watchUntil(ctx, 10*time.Minute, func(s snapshot) bool {
		return s.oldImage == 0 && s.nodes > 0 && s.running == want && s.pending == 0
	})
	if err == nil {
		say("drift roll done: every node runs kwok-image-v2")
	}
	return err
}

// consolidationQuiet is how long the cluster must stay unchanged, with no node being disrupted, to
// count as consolidated.
const consolidationQuiet = 60 * time.Second

// settled holds once ok has held and the view has not changed for quiet.
func settled(quiet time.Duration, ok func(snapshot) bool) func(snapshot) bool {
	var last string
	var since time.Time
	return func(s snapshot) bool {
		view := render(s)
		if view != last {
			last, since = view, time.Now()
		}
		return ok(s) && time.Since(since) >= quiet
	}
}
