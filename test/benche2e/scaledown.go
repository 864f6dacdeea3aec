package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// scaleDown selects the consolidation mode: the 1,000-pod cluster is built, then every Deployment is
// scaled to 30% (300 pods) and the time until Joist reaches a consolidated state is measured, with
// its $/h against the solver's plan for the same 300 pods from scratch.
var scaleDown bool

// scaleDownQuiet is how long the cluster must stay unchanged (no NodeClaim created or deleted, no
// node tainted for disruption, all 300 pods Running) to count as consolidated. The reported time is
// that of the last change, not the end of the quiet window.
const scaleDownQuiet = 90 * time.Second

// validationDelay is the manager's default disruption.Options.ValidationDelay (the bench runs the
// manager with its defaults).
const validationDelay = 5 * time.Second

type scaleDownResult struct {
	upRunning              time.Duration
	nodesBefore            int
	costBefore             float64
	consolidated           time.Duration
	nodesAfter             int
	costAfter              float64
	launched, deleted      int
	planNodes              int
	planCost               float64
	peakRSSMiB, cpuSeconds float64
	// commands is the number of disruption commands started (karpenter_voluntary_disruption_decisions_total);
	// planned, the replacements they launched; unforeseen, the provisioner's launches for pods of
	// workloads a command was moving (joist_disruption_*).
	commands, planned, unforeseen int
	// evicted counts evictions; evictedAgain, evictions of pods re-created during the consolidation
	// (a replica moved twice).
	evicted, evictedAgain int
	// againByNode names the nodes the repeated evictions were made from.
	againByNode string
	// commandLog is the manager's disruption timeline after the scale-down (commandTimeline).
	commandLog string
}

func (r scaleDownResult) String() string {
	return fmt.Sprintf("1000 Running %.1fs on %d nodes $%.3f/h; scaled to 300 → consolidated after %.1fs: %d nodes $%.3f/h (%d NodeClaims launched, %d deleted); plan for 300 from scratch: %d nodes $%.3f/h (ratio %.3f); manager peak RSS %.0f MiB, %.1f CPU-s\n       %s",
		r.upRunning.Seconds(), r.nodesBefore, r.costBefore, r.consolidated.Seconds(), r.nodesAfter, r.costAfter,
		r.launched, r.deleted, r.planNodes, r.planCost, r.costAfter/r.planCost, r.peakRSSMiB, r.cpuSeconds, r.targets())
}

// targets states each of issue #20's scale-down targets with its figure.
func (r scaleDownResult) targets() string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	launchBound := float64(r.planned) * 1.02
	delays := time.Duration(r.commands) * validationDelay
	ratio := r.costAfter / r.planCost
	return fmt.Sprintf("targets: NodeClaims launched %d ≤ planned replacements %d + 2%% (%.2f): %s (%d unforeseen launches); "+
		"evictions %d, of pods already moved %d [from: %s] (each pod evicted at most once): %s; "+
		"consolidated $/h ÷ from-scratch plan %.3f ≤ 1.05: %s; "+
		"time to consolidated %.1fs ≤ 2 × %d commands × %s validation delay = %.0fs: %s (%.2f×)",
		r.launched, r.planned, launchBound, verdict(float64(r.launched) <= launchBound), r.unforeseen,
		r.evicted, r.evictedAgain, r.againByNode, verdict(r.evictedAgain == 0),
		ratio, verdict(ratio <= 1.05),
		r.consolidated.Seconds(), r.commands, validationDelay, (2 * delays).Seconds(), verdict(r.consolidated <= 2*delays),
		r.consolidated.Seconds()/delays.Seconds())
}

// commandTimeline reads the manager's log (JSON lines) and lists, relative to since, every disruption
// command started, executed or abandoned, every node termination finished and every batch the
// provisioner solved: where each command's time goes.
func commandTimeline(logPath string, since time.Time) string {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return "commands: " + err.Error()
	}
	var b strings.Builder
	b.WriteString("commands (s after the scale-down):")
	for _, line := range strings.Split(string(raw), "\n") {
		// Decoded as a map: encoding/json matches keys case-insensitively, and the termination
		// controller's lines carry both "Node" (an object) and "node" (a name).
		var m map[string]any
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		str := func(k string) string { v, _ := m[k].(string); return v }
		num := func(k string) float64 { v, _ := m[k].(float64); return v }
		repl, _ := m["replacements"].([]any)
		names, _ := m["nodeNames"].([]any)
		e := struct {
			TS, Msg, Node, Why string
			Nodes              any
			Replacements       []any
			Savings            float64
			NewClaims          int
		}{TS: str("ts"), Msg: str("msg"), Node: str("node"), Why: str("why"), Nodes: m["nodes"], Replacements: repl,
			Savings: num("savingsPerHour"), NewClaims: int(num("newNodeClaims"))}
		ts, err := time.Parse(time.RFC3339Nano, e.TS)
		if err != nil || ts.Before(since) {
			continue
		}
		at := ts.Sub(since).Seconds()
		switch e.Msg {
		case "disruption command started":
			fmt.Fprintf(&b, "\n         %6.1f started: %v node(s) %v, %d replacement(s) %v, saves $%.4f/h", at, e.Nodes, names, len(e.Replacements), e.Replacements, e.Savings)
		case "look-ahead: replacing first the node(s) earlier deletes would move pods onto":
			fmt.Fprintf(&b, "\n         %6.1f look-ahead: replace of %v run before %v delete(s)", at, names, num("deletesBefore"))
		case "disruption command executed":
			fmt.Fprintf(&b, "\n         %6.1f executed: %v node(s)", at, e.Nodes)
		case "disruption replacement dropped":
			fmt.Fprintf(&b, "\n         %6.1f replacement %s dropped (not needed any more)", at, str("replacement"))
		case "disruption command abandoned":
			fmt.Fprintf(&b, "\n         %6.1f abandoned: %s", at, e.Why)
		case "drained and terminated node":
			fmt.Fprintf(&b, "\n         %6.1f node %s gone", at, e.Node)
		case "solved batch":
			if e.NewClaims > 0 {
				fmt.Fprintf(&b, "\n         %6.1f provisioner launched %d nodeclaim(s)", at, e.NewClaims)
			}
		}
	}
	return b.String()
}

func runScaleDowns(ctx context.Context, joist string, runs int, timeout time.Duration) {
	var rs []scaleDownResult
	for i := 0; i < runs; i++ {
		r, err := runScaleDown(ctx, joist, timeout)
		if err != nil {
			fail(fmt.Errorf("scale-down run %d: %w", i+1, err))
		}
		fmt.Printf("run %d: %s\n       %s\n", i+1, r, r.commandLog)
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].consolidated < rs[j].consolidated })
	fmt.Printf("median of %d (by time to consolidated): %s\n", len(rs), rs[len(rs)/2])
}

// keepLogs is the folder each scale-down run's manager log is copied into ("": not kept).
var keepLogs string

// runScaleDown builds make bench-e2e's cluster (timeout for 1,000 Running), scales it to 300 pods and
// waits up to 5×timeout for the consolidated state.
func runScaleDown(ctx context.Context, joist string, timeout time.Duration) (scaleDownResult, error) {
	var r scaleDownResult
	e, err := env.Start(env.Options{Scheduler: true, ControllerManager: true, KWOK: true})
	if err != nil {
		return r, err
	}
	defer func() { _ = e.Stop() }()
	e.Config.QPS, e.Config.Burst = 1000, 2000
	kube, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return r, err
	}
	metricsArgs, metricsURL, err := env.PlainMetricsArgs()
	if err != nil {
		return r, err
	}
	mgr, err := e.StartManager(env.ManagerOptions{Binary: joist, Args: append(append([]string{"--zap-time-encoding=rfc3339nano"}, metricsArgs...), managerArgs...)})
	if err != nil {
		return r, err
	}
	defer mgr.Kill()

	np := nodePool()
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
		Budgets:             []v1.Budget{{Nodes: "10%"}},
	}
	if err := kube.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "kwok-image-v1"}}); err != nil {
		return r, err
	}
	if err := kube.Create(ctx, np.DeepCopy()); err != nil {
		return r, err
	}
	deploys := deployments()
	upCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	for _, d := range deploys {
		if err := kube.Create(upCtx, d); err != nil {
			return r, err
		}
	}
	if err := waitFor(upCtx, func() (bool, error) {
		s, err := observe(upCtx, kube)
		return err == nil && s.running == 1000, err
	}); err != nil {
		return r, fmt.Errorf("waiting for 1000 pods running: %w", err)
	}
	r.upRunning = time.Since(start)
	before, err := observe(ctx, kube)
	if err != nil {
		return r, err
	}
	r.nodesBefore, r.costBefore = len(before.claims), before.cost

	var down []*appsv1.Deployment
	for _, d := range deploys {
		scaled := d.DeepCopy()
		scaled.Spec.Replicas = ptr.To(*d.Spec.Replicas * 3 / 10)
		down = append(down, scaled)
		got := &appsv1.Deployment{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			return r, err
		}
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Replicas = scaled.Spec.Replicas
		if err := kube.Patch(ctx, got, patch); err != nil {
			return r, fmt.Errorf("scaling %s: %w", d.Name, err)
		}
	}
	plan := solver.Solve(solver.Input{Pods: expand(down), NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: catalog.Default()}}})
	r.planNodes, r.planCost = len(plan.NewNodeClaims), plan.CostPerHour

	downStart := time.Now()
	evictions := watchEvictions(ctx, e.Config, downStart)
	downCtx, cancelDown := context.WithTimeout(ctx, 5*timeout)
	defer cancelDown()
	seen := map[string]bool{}
	for name := range before.claims {
		seen[name] = true
	}
	var last clusterState
	lastChange := downStart
	for {
		s, err := observe(downCtx, kube)
		if err != nil {
			return r, fmt.Errorf("waiting for the consolidated state: %w", err)
		}
		for name := range s.claims {
			if !seen[name] {
				seen[name] = true
				r.launched++
			}
		}
		if s.key() != last.key() {
			last, lastChange = s, time.Now()
		}
		if s.running == 300 && s.pending == 0 && s.disrupting == 0 && time.Since(lastChange) >= scaleDownQuiet {
			break
		}
		select {
		case <-downCtx.Done():
			return r, fmt.Errorf("no consolidated state after %s (last: %d nodes, %d running, %d disrupting): %w",
				5*timeout, len(s.claims), s.running, s.disrupting, downCtx.Err())
		case <-time.After(time.Second):
		}
	}
	r.consolidated = lastChange.Sub(downStart)
	r.nodesAfter, r.costAfter = len(last.claims), last.cost
	r.deleted = r.nodesBefore + r.launched - r.nodesAfter
	r.evicted, r.evictedAgain = evictions.counts()
	r.againByNode = evictions.againByNode()
	sums, err := scrapeSums(ctx, metricsURL, "karpenter_voluntary_disruption_decisions_total",
		"joist_disruption_planned_replacements_total", "joist_disruption_unforeseen_launches_total")
	if err != nil {
		return r, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	r.commands = int(sums["karpenter_voluntary_disruption_decisions_total"])
	r.planned = int(sums["joist_disruption_planned_replacements_total"])
	r.unforeseen = int(sums["joist_disruption_unforeseen_launches_total"])
	r.commandLog = commandTimeline(mgr.LogPath(), downStart)
	if keepLogs != "" {
		if raw, err := os.ReadFile(mgr.LogPath()); err == nil {
			path := filepath.Join(keepLogs, fmt.Sprintf("scale-down-%s.log", downStart.UTC().Format("20060102T150405")))
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				return r, fmt.Errorf("keeping the manager log: %w", err)
			}
			r.commandLog += "\n         manager log kept as " + path
		}
	}
	r.peakRSSMiB, r.cpuSeconds, err = mgr.Stats()
	return r, err
}

// clusterState is what the scale-down mode watches: NodeClaims with their prices, pods, and nodes
// carrying the disruption taint.
type clusterState struct {
	claims                       map[string]float64
	cost                         float64
	running, pending, disrupting int
}

// key changes whenever a NodeClaim comes or goes, a pod changes state or a node is (un)tainted.
func (s clusterState) key() string {
	names := make([]string, 0, len(s.claims))
	for n := range s.claims {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("%d/%d/%d/%s", s.running, s.pending, s.disrupting, strings.Join(names, ","))
}

func observe(ctx context.Context, kube client.Client) (clusterState, error) {
	s := clusterState{claims: map[string]float64{}}
	claims := &v1.NodeClaimList{}
	if err := kube.List(ctx, claims); err != nil {
		return s, err
	}
	its := catalog.Default()
	for _, nc := range claims.Items {
		p, _ := catalog.OfferingPrice(its, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey])
		s.claims[nc.Name] = p
		s.cost += p
	}
	pods := &corev1.PodList{}
	if err := kube.List(ctx, pods, client.InNamespace("default")); err != nil {
		return s, err
	}
	for _, p := range pods.Items {
		switch {
		case !p.DeletionTimestamp.IsZero():
		case p.Status.Phase == corev1.PodRunning:
			s.running++
		case p.Spec.NodeName == "":
			s.pending++
		}
	}
	nodes := &corev1.NodeList{}
	if err := kube.List(ctx, nodes); err != nil {
		return s, err
	}
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			if t.Key == v1.DisruptedTaintKey {
				s.disrupting++
			}
		}
	}
	return s, nil
}

// startBenchManager starts the joist manager without webhooks, logging to joist.log in the env's log dir.
func startBenchManager(e *env.Env, joist string) (*env.Manager, error) {
	return e.StartManager(env.ManagerOptions{Binary: joist, Args: append([]string{"--zap-time-encoding=rfc3339nano"}, managerArgs...)})
}
