package disruption

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	// The delete-only commands that follow each other; this one is the first (lookahead.go). The
	// fresh replacements stay in it as nodes that stay, unless nothing else can be consolidated.
	cin.Candidates = slices.Concat(preferred, deferred, heldCands)
	la := planLookAhead(cin)
	if len(la.steps) == 0 && len(fresh)+len(freshHeld) > 0 {
		cin.Candidates = slices.Concat(preferred, deferred, heldCands, fresh, freshHeld)
		la = planLookAhead(cin)
	}
	deferred = append(deferred, fresh...)
	allowed := map[string]bool{}
	for _, cand := range slices.Concat(preferred, deferred) {
		allowed[cand.Node] = true
	}
	// secondMoves are the nodes whose pods a command moved a moment ago: fresh replacements, and the
	// nodes hosting a replica a command moved (deferred). A command taking one must be worth a second
	// move (worthASecondMove).
	freshNodes, secondMoves := map[string]bool{}, map[string]bool{}
	for _, cand := range slices.Concat(fresh, freshHeld) {
		allowed[cand.Node], freshNodes[cand.Node] = false, true
	}
	for _, cand := range deferred {
		secondMoves[cand.Node] = true
	}
	// When the look-ahead's replace runs first, the deletes after it are marked too: its
	// replacements are there for their pods, and unmarked the kube-scheduler put the re-created pods
	// on them (session 14's second bench run: 16 repeats from a big node deleted two commands later).
	removals := la.removals
	// The replace run first moves the pods its node runs now, as any command does: taking a node
	// whose pods were moved a moment ago, it must be worth a second move too (run later, the same
	// replace saves the same and would be refused alike, so "it is replaced later anyway" does not
	// hold for it).
	reordered, noReorder := reorderedCommandWhy(la.first, cin.Nodes, allowed, budgets)
	if noReorder == "" && !worthASecondMove(reordered, secondMoves, la.costBefore, minSavings) {
		noReorder = fmt.Sprintf("not worth a second move: saves $%.4f/h, under %g of the cluster's $%.4f/h", reordered.SavingsPerHour, minSavings, la.costBefore)
	}
	reorder := noReorder == ""
	dbg.Info("consolidation look-ahead", "steps", la.steps, "removals", sortedNames(la.removals), "afterFirst", sortedNames(la.afterFirst),
		"reorder", noReorder, "preferred", candNames(preferred), "deferred", candNames(deferred), "held", candNames(heldCands),
		"fresh", candNames(fresh), "freshHeld", candNames(freshHeld), "heldNodes", sortedNames(held), "notCandidates", notCandidates, "budgets", budgets)
	if reorder && len(la.afterFirst) > 0 {
		removals = maps.Clone(removals)
		maps.Copy(removals, la.afterFirst)
		for _, n := range la.first.Delete {
			delete(removals, n)
		}
	}
	marked := markable(removals, held, lift)
	c.lastMarks = marked
	steered, noRoom := c.withSteering(cl, marked, held, lift)
	if len(steered) > len(marked) {
		dbg.Info("steering the evicted pods", "marked", len(steered), "lookAheadMarks", len(marked), "noRoom", noRoom)
	}
	markErr := c.markPlannedRemovals(ctx, cl, steered)
	cin.Nodes = markRemovalsInSnapshot(cin.Nodes, marked)
	in.Nodes = cin.Nodes
	tries := sliceCandidates(preferred, deferred, removals)
	cin.Candidates = nil
	if len(tries) > 0 {
		cin.Candidates = tries[0]
	}
	plan := solver.Consolidate(cin)
	decisionDuration.WithLabelValues("underutilized", consolidationTypeMulti).Observe(c.clock.Since(start).Seconds())
	eligibleNodes.WithLabelValues("underutilized").Set(float64(eligible["underutilized"]))

	// 1. Emptiness.
	for _, cmd := range plan.Commands {
		if cmd.Reason == v1.DisruptionReasonEmpty {
			return errors.Join(markErr, c.launch(ctx, cl, byNode, cmd))
		}
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
	// first; else the first slice's command.
	if reorder {
		log.FromContext(ctx).Info("look-ahead: replacing first the node(s) earlier deletes would move pods onto",
			"nodeNames", reordered.Delete, "replacements", len(reordered.Replacements), "deletesBefore", len(la.removals), "deletesAfter", len(la.afterFirst),
			"steps", la.steps)
		return errors.Join(markErr, c.launchCommand(ctx, cl, byNode, reordered, true))
	}
	// The node to replace first is the destination of a command still draining (held): a delete now
	// would move more pods onto it. Wait for the drain instead (the hold ends 5 s after it), then
	// replace it first; a backed-off node does not wait.
	if la.first != nil && !slices.ContainsFunc(la.first.Delete, func(n string) bool { return freshNodes[n] }) && waitsForDrain(la.first.Delete, allowed, held) {
		log.FromContext(ctx).Info("look-ahead: waiting for a drain to end to replace first the node(s) earlier deletes would move pods onto",
			"nodeNames", la.first.Delete, "deletesBefore", len(removals), "steps", la.steps)
		c.mu.Lock()
		c.waitRetry = now.Add(drainPoll)
		c.mu.Unlock()
		return markErr
	}
	for _, cmd := range plan.Commands {
		if cmd.Reason != v1.DisruptionReasonUnderutilized {
			continue
		}
		if worthASecondMove(cmd, secondMoves, plan.CostBefore, minSavings) {
			log.FromContext(ctx).Info("look-ahead", "steps", la.steps, "replaceFirst", la.first != nil)
			return errors.Join(markErr, c.launch(ctx, cl, byNode, cmd))
		}
		logRefused(dbg, 0, cmd, minSavings*plan.CostBefore)
	}
	if len(tries) > 0 && len(plan.Commands) == 0 {
		dbg.Info("no command from candidate list", "list", 0, "candidates", candNames(tries[0]), "costPerHour", plan.CostBefore)
	}
	// 4. The other candidate lists: the nodes hosting pods a command already moved
	// (destinations.go), then the nodes the look-ahead keeps.
	for i := 1; i < len(tries); i++ {
		cin.Candidates = tries[i]
		plan = solver.Consolidate(cin)
		if len(plan.Commands) == 0 {
			dbg.Info("no command from candidate list", "list", i, "candidates", candNames(tries[i]), "costPerHour", plan.CostBefore)
			continue
		}
		cmd := plan.Commands[0]
		if worthASecondMove(cmd, secondMoves, plan.CostBefore, minSavings) {
			return errors.Join(markErr, c.launch(ctx, cl, byNode, cmd))
		}
		logRefused(dbg, i, cmd, minSavings*plan.CostBefore)
	}
	log.FromContext(ctx).V(1).Info("nothing to disrupt", "candidates", len(cin.Candidates), "costPerHour", plan.CostBefore)
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
