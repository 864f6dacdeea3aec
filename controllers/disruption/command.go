package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/claimtemplate"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/controllers/metrics"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// command is one disruption in flight: its nodes are tainted and marked Disrupting, its
// replacements launched; once they are initialized and ValidationDelay has passed, the command is
// validated again and its nodes deleted (termination drains them), or it is abandoned.
type command struct {
	reason  v1.DisruptionReason
	pools   map[string]bool
	targets []target
	plans   []solver.NodeClaimPlan
	// replacements are the names of the claims launched for plans.
	replacements []string
	// destinations are the nodes that stay onto which the plan moves the command's pods.
	destinations map[string]bool
	started      time.Time
	savings      float64
	message      string
	// reserved is the room the command holds, once it executes, for the pods of its nodes
	// (reserve.go); recorded on its claims so a new leader holds it too.
	reserved []state.Slot
	// executed: its claims were deleted.
	executed bool
	// keepReplacements: the replacements are sized for pods later commands move onto them (the
	// look-ahead's replace run first): the re-simulation does not drop them as unneeded. Recorded
	// with asPlanned on the targets (commandRecord), so a resumed command keeps them too.
	keepReplacements bool
	// asPlanned is where such a command planned its pods: the re-simulation keeps them there when
	// they still fit, so no replacement is left empty for the next pass to delete.
	asPlanned []plannedGroup
}

// plannedGroup is a set of a command's pods planned onto one node: an existing node, or the node of
// replacement number replacement (-1 for an existing node).
type plannedGroup struct {
	replacement int
	node        string
	pods        map[types.UID]bool
}

type target struct {
	claim, node string
	pods        map[types.UID]bool
}

func (cmd *command) decision() string {
	if len(cmd.plans) > 0 {
		return "replace"
	}
	return "delete"
}

// nodeNames are the names of the command's nodes, for logs.
func (cmd *command) nodeNames() []string {
	out := make([]string, len(cmd.targets))
	for i, t := range cmd.targets {
		out[i] = t.node
	}
	return out
}

// describe is the command in words, for events and logs.
func describeCommand(reason v1.DisruptionReason, deleted, launched int, savings float64) string {
	switch {
	case launched > 0 && savings > 0:
		return fmt.Sprintf("%s: replacing %d node(s) by %d, saves $%.4f/h", reason, deleted, launched, savings)
	case launched > 0:
		return fmt.Sprintf("%s: replacing %d node(s) by %d", reason, deleted, launched)
	case savings > 0:
		return fmt.Sprintf("%s: deleting %d node(s), saves $%.4f/h", reason, deleted, savings)
	}
	return fmt.Sprintf("%s: deleting %d node(s)", reason, deleted)
}

// start taints the command's nodes, marks their claims Disrupting and launches the replacements.
func (c *Controller) start(ctx context.Context, cl *cluster, cmd *command) error {
	cmd.started = c.clock.Now()
	for _, t := range cmd.targets {
		if err := c.setTaint(ctx, t.node, true); err != nil {
			return errors.Join(err, c.abort(ctx, cmd, "tainting failed"))
		}
		if err := c.setDisrupting(ctx, t.claim, true, string(cmd.reason), cmd.message); err != nil {
			return errors.Join(err, c.abort(ctx, cmd, "marking failed"))
		}
	}
	for i := range cmd.plans {
		plan := &cmd.plans[i]
		np := cl.pools[plan.NodePool]
		if np == nil {
			return c.abort(ctx, cmd, fmt.Sprintf("nodepool %s of a replacement is gone", plan.NodePool))
		}
		nc := claimtemplate.ForPlan(np, plan)
		if err := c.kube.Create(ctx, nc); err != nil {
			return errors.Join(fmt.Errorf("launching replacement for %s: %w", cmd.reason, err), c.abort(ctx, cmd, "launching a replacement failed"))
		}
		cmd.replacements = append(cmd.replacements, nc.Name)
		metrics.CountNodeClaimCreated(np.Name, strings.ToLower(string(cmd.reason)))
	}
	c.record(ctx, cmd)
	decisionsTotal.WithLabelValues(cmd.decision(), strings.ToLower(string(cmd.reason)), consolidationType(cmd)).Inc()
	for pool := range cmd.pools {
		if np := cl.pools[pool]; np != nil {
			c.recorder.Eventf(np, nil, corev1.EventTypeNormal, "DisruptionLaunching", "Disrupt", "%s", cmd.message)
		}
	}
	for _, t := range cmd.targets {
		if nc := claimNamed(cl, t.claim); nc != nil {
			c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "DisruptionLaunching", "Disrupt", "%s", cmd.message)
		}
	}
	log.FromContext(ctx).Info("disruption command started", "reason", cmd.reason, "nodes", len(cmd.targets),
		"nodeNames", cmd.nodeNames(), "replacements", cmd.replacements, "savingsPerHour", cmd.savings)
	return nil
}

// advance moves a started command on; it reports whether the command is over.
func (c *Controller) advance(ctx context.Context, cl *cluster, cmd *command) (bool, error) {
	now := c.clock.Now()
	if now.Before(cmd.started.Add(c.opts.ValidationDelay)) {
		return false, nil
	}
	for _, name := range cmd.replacements {
		nc := claimNamed(cl, name)
		switch {
		case nc == nil || !nc.DeletionTimestamp.IsZero():
			return true, c.abort(ctx, cmd, fmt.Sprintf("replacement nodeclaim %s failed to launch", name))
		case !nc.IsTrue(v1.ConditionTypeInitialized):
			if now.After(cmd.started.Add(c.opts.ReplacementTimeout)) {
				return true, c.abort(ctx, cmd, fmt.Sprintf("replacement nodeclaim %s did not initialize within %s", name, c.opts.ReplacementTimeout))
			}
			return false, nil
		}
	}
	if why := c.invalid(cl, cmd, now); why != "" {
		return true, c.abort(ctx, cmd, why)
	}
	why, placements, unneeded, err := c.stillFits(ctx, cl, cmd)
	if err != nil {
		return false, err
	}
	if why != "" {
		c.backOff(cmd, now)
		return true, c.abort(ctx, cmd, why)
	}
	if err := c.dropReplacements(ctx, cl, cmd, unneeded); err != nil {
		return false, err
	}
	c.reserve(cl, cmd, placements)
	if len(cmd.reserved) > 0 {
		c.record(ctx, cmd)
	}
	// Before the first eviction: the re-created pods bind only where the plan put them (steer.go).
	steered, noRoom := c.withSteering(cl, c.lastMarks, c.heldNodes(cl), c.liftMarks(cl, now))
	log.FromContext(ctx).V(1).Info("steering the evicted pods", "marked", len(steered), "lookAheadMarks", len(c.lastMarks), "noRoom", noRoom)
	errs := []error{c.markPlannedRemovals(ctx, cl, steered)}
	for _, t := range cmd.targets {
		nc := claimNamed(cl, t.claim)
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "DisruptionTerminating", "Disrupt", "Disrupting NodeClaim: %s", cmd.message)
		if node := cl.nodes[t.node]; node != nil {
			c.recorder.Eventf(node, nil, corev1.EventTypeNormal, "DisruptionTerminating", "Disrupt", "Disrupting Node: %s", cmd.message)
		}
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", t.claim, err))
		}
	}
	cmd.executed = true
	c.recordMoves(cl, cmd, now)
	c.recordFresh(ctx, cmd, unneeded, now)
	log.FromContext(ctx).Info("disruption command executed", "reason", cmd.reason, "nodes", len(cmd.targets), "savingsPerHour", cmd.savings)
	return true, errors.Join(errs...)
}

// dropReplacements deletes the replacements the command's re-simulation did without, before any pod
// moves: no pod counts on them, and a pod moved there would be moved again by the command that
// consolidates them away later (unneededReplacements). They stay in cmd.replacements: they were
// launched as planned.
func (c *Controller) dropReplacements(ctx context.Context, cl *cluster, cmd *command, names []string) error {
	for _, name := range names {
		nc := claimNamed(cl, name)
		if nc == nil {
			continue
		}
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting unneeded replacement %s: %w", name, err)
		}
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "DisruptionTerminating", "Disrupt",
			"Replacement not needed: re-simulated before deleting, the pods of %s fit on the nodes that stay", strings.Join(cmd.nodeNames(), ", "))
		log.FromContext(ctx).Info("disruption replacement dropped", "reason", cmd.reason, "replacement", name, "nodeNames", cmd.nodeNames())
	}
	return nil
}

// invalid re-checks the command before anything is deleted: every node is still there, still
// unprotected, and no pod arrived on it since the plan.
func (c *Controller) invalid(cl *cluster, cmd *command, now time.Time) string {
	for _, t := range cmd.targets {
		nc := claimNamed(cl, t.claim)
		node := cl.nodes[t.node]
		if nc == nil || !nc.DeletionTimestamp.IsZero() || node == nil || !node.DeletionTimestamp.IsZero() {
			return fmt.Sprintf("node %s changed (deleted meanwhile)", t.node)
		}
		pool := cl.pools[nc.Labels[v1.NodePoolLabelKey]]
		if pool == nil {
			return fmt.Sprintf("nodepool of node %s is gone", t.node)
		}
		pods := cl.podsByNode[t.node]
		if p := disruptionpolicy.Protect(node, nc, pods, cl.pdbs, now); p != nil {
			return p.String()
		}
		for uid := range podUIDs(pods) {
			if !t.pods[uid] {
				return fmt.Sprintf("a pod arrived on node %s", t.node)
			}
		}
	}
	return ""
}

// abort abandons a command: its nodes are untainted and unmarked, and replacements that took no
// pods are deleted.
func (c *Controller) abort(ctx context.Context, cmd *command, why string) error {
	var errs []error
	for _, t := range cmd.targets {
		errs = append(errs, c.setTaint(ctx, t.node, false), c.setDisrupting(ctx, t.claim, false, "", ""), c.forget(ctx, t.claim))
		nc := &v1.NodeClaim{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: t.claim}, nc); err == nil {
			c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "DisruptionBlocked", "Disrupt", "Abandoned %s: %s", cmd.reason, why)
		}
	}
	for _, name := range cmd.replacements {
		nc := &v1.NodeClaim{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			continue
		}
		pods := &corev1.PodList{}
		if nc.Status.NodeName != "" {
			if err := c.kube.List(ctx, pods, client.MatchingFields{indexes.PodNodeName: nc.Status.NodeName}); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if len(podUIDs(podPointers(pods.Items))) == 0 {
			errs = append(errs, client.IgnoreNotFound(c.kube.Delete(ctx, nc)))
		}
	}
	log.FromContext(ctx).Info("disruption command abandoned", "reason", cmd.reason, "why", why)
	return errors.Join(errs...)
}

func podPointers(items []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func claimNamed(cl *cluster, name string) *v1.NodeClaim {
	for _, nc := range cl.claims {
		if nc.Name == name {
			return nc
		}
	}
	return nil
}

// setTaint adds or removes karpenter.sh/disrupted:NoSchedule.
func (c *Controller) setTaint(ctx context.Context, name string, on bool) error {
	return c.setNodeTaint(ctx, name, v1.DisruptedNoScheduleTaint, on)
}

// setNodeTaint adds or removes the taint on the node. It reads the node from the cache, and once
// more from the apiserver when the patch conflicts: the cache may not have seen this loop's own
// write of a moment ago (the look-ahead's mark on the node a command of the same pass then taints;
// the scale-down bench's new run 2 of session 18 lost its first command to that conflict).
func (c *Controller) setNodeTaint(ctx context.Context, name string, taint corev1.Taint, on bool) error {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	err := c.patchNodeTaint(ctx, node, taint, on)
	if !apierrors.IsConflict(err) || c.apiReader == nil {
		return err
	}
	node = &corev1.Node{}
	if err := c.apiReader.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	return c.patchNodeTaint(ctx, node, taint, on)
}

// patchNodeTaint patches the taint on or off the node as read, with an optimistic lock.
func (c *Controller) patchNodeTaint(ctx context.Context, node *corev1.Node, taint corev1.Taint, on bool) error {
	name := node.Name
	if disruptionpolicy.HasTaint(node, taint) == on {
		return nil
	}
	stored := node.DeepCopy()
	if on {
		node.Spec.Taints = append(node.Spec.Taints, taint)
	} else {
		var keep []corev1.Taint
		for _, t := range node.Spec.Taints {
			if !t.MatchTaint(&taint) {
				keep = append(keep, t)
			}
		}
		node.Spec.Taints = keep
	}
	if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting taint %s:%s on node %s to %t: %w", taint.Key, taint.Effect, name, on, err))
	}
	return nil
}

// setDisrupting sets or clears the claim's Disrupting condition.
func (c *Controller) setDisrupting(ctx context.Context, name string, on bool, reason, message string) error {
	nc := &v1.NodeClaim{}
	if err := c.apiReader.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	stored := nc.DeepCopy()
	changed := false
	if on {
		changed = nc.SetCondition(v1.ConditionTypeDisrupting, metav1.ConditionTrue, reason, message)
	} else {
		changed = nc.ClearCondition(v1.ConditionTypeDisrupting)
	}
	if !changed {
		return nil
	}
	if err := c.kube.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s status: %w", name, err))
	}
	return nil
}
