package disruption

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// decide runs the voluntary methods in order (emptiness, drift, consolidation) and starts the first
// command one of them yields. Commands in flight take their pools' budgets (their nodes are marked
// Disrupting) and their pods are planned as displaced, so a pool runs several commands at once up
// to its budget, one more per pass.
func (c *Controller) decide(ctx context.Context, cl *cluster, members []*member) error {
	now := c.clock.Now()
	counts := map[string]disruptionpolicy.PoolCount{}
	for name := range cl.pools {
		total, disrupting := cl.poolCounts(name)
		counts[name] = disruptionpolicy.PoolCount{Total: total, Disrupting: disrupting}
	}
	budgets := disruptionpolicy.PoolBudgets(cl.pools, counts, now)
	for name, b := range budgets {
		for _, r := range disruptionpolicy.Reasons {
			allowedDisruptionsGauge.WithLabelValues(name, string(r)).Set(float64(b[r]))
		}
	}
	free := func(m *member) bool { return m.blocked == "" }
	c.forgetOldMoves(now)

	// Provisioning is under way (pods pending and claims launching): wait, or the plan would count
	// on room the new pods are about to take.
	lift := c.liftMarks(cl, now)
	dbg := log.FromContext(ctx).V(1)
	if cl.pending > 0 && cl.claimsInFlight > 0 {
		dbg.Info("no new command: pods pending while claims launch", "pending", cl.pending, "claimsInFlight", cl.claimsInFlight)
		if lift {
			c.lastMarks = nil
			return c.markPlannedRemovals(ctx, cl, nil) // their room must stay open (liftMarks)
		}
		return nil
	}
	// Nothing the last idle pass read has changed: it would plan the same nothing again.
	held := c.heldNodes(cl)
	fp := c.fingerprint(cl, members, budgets, held)
	if c.unchangedSinceIdle(fp) {
		dbg.Info("no new command: nothing changed since the last idle pass")
		return nil
	}
	start := c.clock.Now()
	in, err := c.snapshot(ctx)
	if err != nil {
		return err
	}
	byNode := map[string]*member{}
	for _, m := range members {
		byNode[m.node.Name] = m
	}
	in = disruptionpolicy.Prepare(in, disruptionpolicy.Cluster{Displaced: displacedPods(cl, in.Pods, c.inFlightNodes(nil), in),
		Guardrails: cl.guardrails, NamespaceLabels: cl.nsLabels})
	minSavings := c.opts.MinSavingsFraction
	// Planned with the look-ahead's own marks of the last pass, not the wider ones a drain steers
	// with (steer.go).
	in.Nodes = markRemovalsInSnapshot(in.Nodes, c.lastMarks)
	cin := solver.ConsolidationInput{Input: in, Budgets: budgets, MinSavingsFraction: &minSavings, SpotToSpot: c.opts.SpotToSpotConsolidation}
	cin.Pods = nil
	inSnapshot := map[string]bool{}
	for _, n := range in.Nodes {
		inSnapshot[n.Name] = true
	}
	// heldCands may go in the look-ahead, but not in a command now (destinations of commands in
	// flight, back-offs). fresh are the replacements commands launched (freshReplacements): after
	// the other nodes, in the look-ahead as in a command, and never in the reorder.
	var preferred, deferred, heldCands, fresh, freshHeld []solver.Candidate
	freshClaims := c.freshReplacements(now)
	eligible := map[string]int{}
	notCandidates := map[string]string{}
	for _, m := range members {
		if !free(m) || !m.consolidatable || !inSnapshot[m.node.Name] {
			notCandidates[m.node.Name] = fmt.Sprintf("blocked=%q consolidatable=%t inSnapshot=%t", m.blocked, m.consolidatable, inSnapshot[m.node.Name])
			continue
		}
		cand := disruptionpolicy.Candidate(m.policyNode(), m.verdict)
		notNow := held[m.node.Name] || c.backedOff(m.node.Name, now)
		switch {
		case notNow && freshClaims[m.claim.Name]:
			freshHeld = append(freshHeld, cand)
			continue
		case notNow:
			heldCands = append(heldCands, cand)
			continue
		case freshClaims[m.claim.Name]:
			fresh = append(fresh, cand)
		case c.hostsMovedReplica(m):
			deferred = append(deferred, cand)
		default:
			preferred = append(preferred, cand)
		}
		eligible["underutilized"]++
	}
	step := planConsolidationStep(cin, consolidationCandidates{preferred: preferred, deferred: deferred, held: heldCands, fresh: fresh, freshHeld: freshHeld}, held, lift)
	la := step.la
	dbg.Info("consolidation look-ahead", "steps", la.steps, "removals", sortedNames(la.removals), "afterFirst", sortedNames(la.afterFirst),
		"reorder", step.noReorder, "preferred", candNames(preferred), "deferred", candNames(deferred), "held", candNames(heldCands),
		"fresh", candNames(fresh), "freshHeld", candNames(freshHeld), "heldNodes", sortedNames(held), "notCandidates", notCandidates, "budgets", budgets)
	c.lastMarks = step.marked
	steered, noRoom := c.withSteering(cl, step.marked, held, lift)
	if len(steered) > len(step.marked) {
		dbg.Info("steering the evicted pods", "marked", len(steered), "lookAheadMarks", len(step.marked), "noRoom", noRoom)
	}
	markErr := c.markPlannedRemovals(ctx, cl, steered)
	in.Nodes = step.cin.Nodes
	decisionDuration.WithLabelValues("underutilized", consolidationTypeMulti).Observe(c.clock.Since(start).Seconds())
	eligibleNodes.WithLabelValues("underutilized").Set(float64(eligible["underutilized"]))

	// 1. Emptiness.
	if cmd, ok := step.emptiness(); ok {
		return errors.Join(markErr, c.launch(ctx, cl, byNode, cmd))
	}
	// 2. Drift.
	var drifted []*member
	for _, m := range members {
		if m.driftReason != "" && m.verdict.DriftBlocked(m.claim) == "" && inSnapshot[m.node.Name] && !held[m.node.Name] && budgets[m.pool.Name][v1.DisruptionReasonDrifted] > 0 {
			drifted = append(drifted, m)
		}
	}
	eligibleNodes.WithLabelValues("drifted").Set(float64(len(drifted)))
	sort.SliceStable(drifted, func(i, j int) bool { return drifted[i].cost < drifted[j].cost })
	turn := driftTurn(drifted, c.lastDriftEvaluated, c.opts.DriftEvaluationsPerPass)
	reportDriftTurn(len(turn), len(drifted))
	if len(turn) < len(drifted) {
		log.FromContext(ctx).V(1).Info("drift evaluation budget: the other drifted nodes get their turn on later passes",
			"evaluated", len(turn), "drifted", len(drifted), "budget", c.opts.DriftEvaluationsPerPass)
	}
	for _, m := range turn {
		c.lastDriftEvaluated = m.claim.Name
		cmd, why := c.driftCommand(in, m)
		if why != "" {
			c.blockedEvent(m, "cannot replace drifted node: "+why)
			continue
		}
		return errors.Join(markErr, c.launch(ctx, cl, byNode, cmd))
	}
	// 3. Consolidation: the look-ahead's replace of a node earlier deletes move pods onto, run
	// first; else the first candidate list's command worth a second move (consolidationStep).
	ch := step.command()
	for _, n := range ch.notes {
		if n.refused != nil {
			logRefused(dbg, n.list, *n.refused, n.threshold)
			continue
		}
		dbg.Info("no command from candidate list", "list", n.list, "candidates", n.candidates, "costPerHour", n.costPerHour)
	}
	switch {
	case ch.reordered:
		log.FromContext(ctx).Info("look-ahead: replacing first the node(s) earlier deletes would move pods onto",
			"nodeNames", ch.cmd.Delete, "replacements", len(ch.cmd.Replacements), "deletesBefore", len(la.removals), "deletesAfter", len(la.afterFirst),
			"steps", la.steps)
		return errors.Join(markErr, c.launchCommand(ctx, cl, byNode, ch.cmd, true))
	case ch.waitForDrain:
		log.FromContext(ctx).Info("look-ahead: waiting for a drain to end to replace first the node(s) earlier deletes would move pods onto",
			"nodeNames", la.first.Delete, "deletesBefore", len(step.removals), "steps", la.steps)
		c.mu.Lock()
		c.waitRetry = now.Add(drainPoll)
		c.mu.Unlock()
		return markErr
	case ch.ok:
		if ch.list == 0 {
			log.FromContext(ctx).Info("look-ahead", "steps", la.steps, "replaceFirst", la.first != nil)
		}
		return errors.Join(markErr, c.launch(ctx, cl, byNode, ch.cmd))
	}
	log.FromContext(ctx).V(1).Info("nothing to disrupt", "candidates", len(step.cin.Candidates), "costPerHour", step.plan.CostBefore)
	if dbg.Enabled() {
		if cmd, ok := step.spotRuleRefusal(); ok {
			dbg.Info("no command because spot-to-spot consolidation is off: with it on the planner would replace spot node(s) by one spot node",
				"nodeNames", cmd.Delete, "replacements", len(cmd.Replacements), "savingsPerHour", cmd.SavingsPerHour)
		}
	}
	if markErr != nil {
		return markErr // not idle: the marks are written again next pass
	}
	c.rememberIdle(fp)
	return nil
}

// driftCommand plans the replacement of one drifted node: its pods on the other nodes and new
// ones. It returns why not when a pod cannot be placed.
func (c *Controller) driftCommand(in solver.Input, m *member) (solver.Command, string) {
	sub := solver.Input{NodePools: in.NodePools, DaemonSets: in.DaemonSets, VolumeZones: in.VolumeZones}
	for _, n := range in.Nodes {
		if n.Name == m.node.Name {
			for _, p := range n.Pods {
				if movable(p) {
					sub.Pods = append(sub.Pods, p)
				}
			}
			continue
		}
		sub.Nodes = append(sub.Nodes, n)
	}
	r := solver.Solve(sub)
	if len(r.Unschedulable) > 0 {
		u := r.Unschedulable[0]
		return solver.Command{}, fmt.Sprintf("pod %s/%s: %s", u.Pod.Namespace, u.Pod.Name, u.Reason)
	}
	return solver.Command{Reason: v1.DisruptionReasonDrifted, Delete: []string{m.node.Name}, Replacements: r.NewNodeClaims,
		Placements: r.ExistingPlacements}, ""
}

// launch turns a planned command into a command in flight.
func (c *Controller) launch(ctx context.Context, cl *cluster, byNode map[string]*member, sc solver.Command) error {
	return c.launchCommand(ctx, cl, byNode, sc, false)
}

// launchCommand is launch; a reordered command (the look-ahead's replace run first,
// reorderedCommand) keeps its replacements through the re-simulation and its pods where it planned
// them (asPlanned).
func (c *Controller) launchCommand(ctx context.Context, cl *cluster, byNode map[string]*member, sc solver.Command, reordered bool) error {
	cmd := &command{reason: sc.Reason, pools: map[string]bool{}, plans: sc.Replacements, savings: sc.SavingsPerHour, destinations: map[string]bool{}}
	for _, pl := range sc.Placements {
		cmd.destinations[pl.Node] = true
		if reordered {
			cmd.asPlanned = append(cmd.asPlanned, plannedGroup{replacement: -1, node: pl.Node, pods: podUIDs(pl.Pods)})
		}
	}
	for i, r := range sc.Replacements {
		if reordered {
			cmd.asPlanned = append(cmd.asPlanned, plannedGroup{replacement: i, pods: podUIDs(r.Pods)})
		}
	}
	cmd.keepReplacements = reordered
	for _, name := range sc.Delete {
		m := byNode[name]
		if m == nil {
			return fmt.Errorf("planned node %s is not a Joist node", name)
		}
		cmd.pools[m.pool.Name] = true
		cmd.targets = append(cmd.targets, target{claim: m.claim.Name, node: name, pods: podUIDs(m.pods)})
	}
	for _, r := range sc.Replacements {
		cmd.pools[r.NodePool] = true
	}
	cmd.message = describeCommand(sc.Reason, len(sc.Delete), len(sc.Replacements), sc.SavingsPerHour)
	if sc.Reason == v1.DisruptionReasonDrifted {
		if m := byNode[sc.Delete[0]]; m != nil {
			cmd.message += fmt.Sprintf(" (%s)", m.driftReason)
		}
	}
	if err := c.start(ctx, cl, cmd); err != nil {
		return err
	}
	c.track(cmd)
	return nil
}

// blockedEvent tells, once per change, why a node is not disrupted.
func (c *Controller) blockedEvent(m *member, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.blocked[m.claim.Name] == why {
		return
	}
	c.blocked[m.claim.Name] = why
	if why == "" {
		return
	}
	c.recorder.Eventf(m.claim, nil, corev1.EventTypeNormal, "DisruptionBlocked", "Disrupt", "Blocked: %s", why)
	c.recorder.Eventf(m.node, nil, corev1.EventTypeNormal, "DisruptionBlocked", "Disrupt", "Blocked: %s", why)
}

// expire deletes NodeClaims past their expireAfter. Expiry is forceful, as in Karpenter v1: no
// budget, no do-not-disrupt; the drain is bounded by terminationGracePeriod and the pods go back
// through provisioning.
func (c *Controller) expire(ctx context.Context, cl *cluster, now time.Time) error {
	var errs []error
	for _, nc := range cl.claims {
		if !nc.DeletionTimestamp.IsZero() || !disruptionpolicy.Expired(nc, now) {
			continue
		}
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "Expired", "Disrupt", "Deleting NodeClaim: expired after %s (expireAfter)", nc.Spec.ExpireAfter.String())
		log.FromContext(ctx).Info("deleting expired nodeclaim", "nodeclaim", nc.Name, "expireAfter", nc.Spec.ExpireAfter.String())
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting expired nodeclaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// candNames are the candidates' node names, for the debug log.
func candNames(cands []solver.Candidate) []string {
	out := make([]string, len(cands))
	for i, cand := range cands {
		out[i] = cand.Node
	}
	return out
}

// sortedNames are the set's names in order, for the debug log.
func sortedNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n, ok := range set {
		if ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// logRefused says, on the debug log, that candidate list list's command saves too little to move
// pods a command already moved (worthASecondMove).
func logRefused(dbg logr.Logger, list int, cmd solver.Command, threshold float64) {
	dbg.Info("command refused: not worth a second move", "list", list, "nodeNames", cmd.Delete, "replacements", len(cmd.Replacements),
		"savingsPerHour", cmd.SavingsPerHour, "threshold", threshold)
}
