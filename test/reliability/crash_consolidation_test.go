package reliability

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joist-dev/joist/test/env"
)

// consolidatedBound is how far above the solver's from-scratch plan for the remaining pods the
// consolidated cluster may stay ($/h): consolidation moves pods incrementally, a node at a time, and
// stops where no single command saves money (docs/disruption.md), so it does not reach the plan
// exactly even without a crash.
const consolidatedBound = 1.25

// killMoment is when, after the scale-down, a trial SIGKILLs the manager: once the first process
// shows a command in flight in the apiserver, plus a random extra delay.
type killMoment string

const (
	// killAtReplacement: a replace command started (its log line names the replacements launched).
	killAtReplacement killMoment = "replacement launched"
	// killAtTaint: a node carries karpenter.sh/disrupted or a claim is Disrupting (command started).
	killAtTaint killMoment = "node tainted"
	// killAtDrain: a NodeClaim is being deleted and a pod it evicted is still terminating (command
	// executed; termination draining).
	killAtDrain killMoment = "mid-drain"
	// killAtRandom: a random delay after the scale-down, whatever is happening.
	killAtRandom killMoment = "random"
)

var killMoments = []killMoment{killAtDrain, killAtReplacement, killAtTaint, killAtRandom}

// TestCrashDuringConsolidation scales a cluster up, enables consolidation and scales every
// Deployment to 30%, then SIGKILLs the manager process while consolidation commands are in flight
// (nodes tainted and marked Disrupting, replacements launching, nodes draining) and starts a new
// one. Every Deployment has a PodDisruptionBudget and its pods take shutdownTime to stop once
// deleted, so drains take a while and the mid-drain kill lands while evicted pods are still
// terminating. Pass: every remaining pod Running, no node left tainted, no live claim left
// Disrupting, no duplicate, leaked or stuck instance, the cluster consolidated to within
// consolidatedBound of the solver's from-scratch plan, stable for a quiet window — and, watched
// through the whole trial, no PDB ever short of more pods than it allows while evicted pods were out,
// and no pod the kube-scheduler found no room for (evicted pods land on planned nodes).
// Short: 2 trials of 40 pods (killed mid-drain, then after a replacement launched);
// RELIABILITY_LONG: 8 trials of 300 pods.
func TestCrashDuringConsolidation(t *testing.T) {
	trials, pods, quiet, timeout, shutdown := 2, 40, 15*time.Second, 8*time.Minute, 8*time.Second
	if long() {
		trials, pods, quiet, timeout, shutdown = 8, 300, 30*time.Second, 15*time.Minute, 20*time.Second
	}
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	var rows []string
	for trial := 0; trial < trials; trial++ {
		moment := killMoments[trial%len(killMoments)]
		extra := time.Duration(r.Intn(12000)) * time.Millisecond
		switch moment {
		case killAtRandom:
			extra = time.Duration(1000+r.Intn(40000)) * time.Millisecond
		case killAtDrain:
			extra = time.Duration(r.Intn(int(shutdown/time.Millisecond)/3)) * time.Millisecond
		}
		ok := t.Run(fmt.Sprintf("trial-%02d", trial), func(t *testing.T) {
			row := consolidationCrashTrial(t, pods, moment, extra, quiet, timeout, shutdown)
			t.Log(row)
			rows = append(rows, row)
		})
		if !ok {
			rows = append(rows, fmt.Sprintf("| %d | %s + %s | FAILED | | | | | | | | | | | | | |", trial, moment, extra.Round(10*time.Millisecond)))
		}
	}
	report(t, "crash during consolidation", "| trial | killed at | killed after | in flight at the kill | consolidated after | nodes | $/h after | ÷ plan | commands replace / delete | commands resumed / nodes released | claims launched | of which provisioned | evictions | PDB violations | pods Pending for lack of a planned node (found no room) | reservations: planned / unforeseen (ratio), reserved / taken / unused, repeated evictions |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", rows)
}

func consolidationCrashTrial(t *testing.T, pods int, moment killMoment, extra, quiet, timeout, shutdown time.Duration) string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	metricsArgs, metricsURL, err := env.PlainMetricsArgs()
	if err != nil {
		t.Fatal(err)
	}
	// The trial holds the end state to the from-scratch plan, which buys cheaper spot types than
	// the scale-up left: reaching it takes spot→spot replacement (off by default, as upstream).
	s := newStack(t, append([]string{"--spot-to-spot-consolidation=true"}, metricsArgs...)...)
	if dir := os.Getenv("RELIABILITY_KEEP_LOGS"); dir != "" {
		t.Cleanup(func() { s.keepLogs(t, filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))) })
	}
	s.setUp(ctx, time.Second)
	// No consolidation while the cluster grows: the trial is about the scale-down.
	s.consolidating(ctx, "Never")
	watch := s.watchPods(ctx, shutdown)
	scraper := scrapeMetrics(ctx, metricsURL, time.Second)
	s.start()
	scraper.running(s.starts)
	deploys := deployments(pods)
	slowDrains(deploys)
	pdbs := pdbsFor(deploys)
	for _, d := range deploys {
		if err := s.kube.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, pdb := range pdbs {
		if err := s.kube.Create(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	s.waitRunning(ctx, pods, 10*time.Minute)
	if _, err := s.settle(ctx, 3*time.Minute); err != nil {
		t.Fatalf("after the scale-up: %v", err)
	}
	before, err := s.viewConsolidation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scaledDown := time.Now()
	np := s.consolidating(ctx, "0s")
	down := s.scaleTo(ctx, deploys, 30)
	watch.arm(pdbs, down)
	want := 0
	for _, d := range down {
		want += int(*d.Spec.Replicas)
	}
	plan := planFromScratch(t, np, down)

	atKill, seen := s.waitKillMoment(ctx, t, watch, moment, scaledDown, 3*time.Minute)
	time.Sleep(extra)
	if v, err := s.viewConsolidation(ctx); err == nil {
		atKill = v
	}
	midDrain := watch.draining()
	scraper.scrapeNow(ctx, metricsURL)
	scraper.running(0)
	s.kill()
	killedAfter := time.Since(scaledDown)
	t.Logf("killed %s after the scale-down (%s + %s; seen: %t; evicted pods terminating: %t): %s", killedAfter.Round(10*time.Millisecond), moment, extra, seen, midDrain, atKill)
	s.start()
	scraper.running(s.starts)

	after, consolidated, launched := s.waitConsolidated(ctx, t, scaledDown, before, want, plan.CostPerHour, quiet, timeout)
	scraper.scrapeNow(ctx, metricsURL)
	ratio := after.cost / plan.CostPerHour
	first, err := s.readDisruptionLog(1, scaledDown)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.readDisruptionLog(2, scaledDown)
	if err != nil {
		t.Fatal(err)
	}
	// Replacements the first process launched are gone (emptiness removed those whose command died)
	// or host pods.
	if idle, err := s.idleReplacements(ctx, first.replacements); err != nil {
		t.Fatal(err)
	} else if len(idle) > 0 {
		t.Errorf("replacements launched before the crash still exist with no pod: %v", idle)
	}
	watched := watch.result()
	if len(watched.violations) > 0 {
		t.Errorf("%d moment(s) a PodDisruptionBudget was short of more pods than it allows while evicted pods were out:\n%s",
			len(watched.violations), strings.Join(watched.violations, "\n"))
	}
	// Issue #20's target "0 pods Pending for lack of a planned node" is a figure of the reliability
	// report (its "pods Pending for lack of a planned node" column), not a pass/fail condition: on 2 December one
	// mid-drain trial saw 2 such pods, which the reservations do not prevent yet. A PDB violation
	// (above) fails the trial.
	if len(watched.unschedulable) > 0 {
		t.Logf("TARGET MISSED: %d pod(s) the kube-scheduler found no room for during consolidation (Pending for lack of a planned node): %v",
			len(watched.unschedulable), watched.unschedulable)
	}
	if ratio > farAbovePlan {
		s.keepFarAbovePlan(t, ratio)
	}
	figures := scraper.figures()
	total := first
	total.add(second)
	t.Logf("consolidated %s after the scale-down: %d → %d nodes, $%.3f → $%.3f/h; plan for %d pods from scratch %d nodes $%.3f/h (÷ %.3f); %d claims launched; commands: %d replace, %d delete (%d by the first process), %d abandoned; after the restart %d commands resumed, %d nodes released; %d claims provisioned for displaced pods; %d evictions, %d PDB violations, %d pods Pending for lack of a planned node (the kube-scheduler found no room); reservations: %s",
		consolidated.Round(100*time.Millisecond), len(before.claims), len(after.claims), before.cost, after.cost, want,
		len(plan.NewNodeClaims), plan.CostPerHour, ratio, launched, total.replaces, total.deletes, first.replaces+first.deletes, total.abandoned, second.resumed, second.released, total.provisioned,
		watched.evicted, len(watched.violations), len(watched.unschedulable), figures)
	at := string(moment)
	if !seen {
		at += " (not seen)"
	}
	if moment == killAtDrain && !midDrain {
		at += " (drain over at the kill)"
	}
	return fmt.Sprintf("| %s | %s + %s | %s | %d tainted, %d disrupting, %d launching, %d deleting | %s | %d → %d | $%.3f | %.3f | %d / %d | %d / %d | %d | %d | %d | %d | %d | %g / %g (%s), %g / %g / %g, %g |",
		strings.TrimPrefix(t.Name(), "TestCrashDuringConsolidation/"), at, extra.Round(10*time.Millisecond),
		killedAfter.Round(100*time.Millisecond), len(atKill.tainted), len(atKill.disrupting), atKill.uninitialized, atKill.deleting,
		consolidated.Round(100*time.Millisecond), len(before.claims), len(after.claims), after.cost, ratio, total.replaces, total.deletes, second.resumed, second.released, launched, total.provisioned,
		watched.evicted, len(watched.violations), len(watched.unschedulable),
		figures.planned, figures.unforeseen, figures.launchRatio(), figures.reserved, figures.taken, figures.unused, figures.repeated)
}

// waitKillMoment waits (up to timeout) until the first manager shows the moment in the apiserver; it
// reports whether it saw it (a trial whose consolidation never launches a replacement is killed at
// the timeout instead).
func (s *stack) waitKillMoment(ctx context.Context, t *testing.T, watch *podWatch, moment killMoment, since time.Time, timeout time.Duration) (consolidationView, bool) {
	deadline := time.Now().Add(timeout)
	for {
		v, err := s.viewConsolidation(ctx)
		if err == nil {
			switch moment {
			case killAtRandom:
				return v, true
			case killAtTaint:
				if len(v.tainted) > 0 || len(v.disrupting) > 0 {
					return v, true
				}
			case killAtDrain:
				if v.deleting > 0 && watch.draining() {
					return v, true
				}
			case killAtReplacement:
				if d, err := s.readDisruptionLog(s.starts, since); err == nil && d.replaces > 0 {
					return v, true
				}
			}
		}
		if time.Now().After(deadline) {
			t.Logf("no %q within %s: killing anyway", moment, timeout)
			return v, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitConsolidated waits for the consolidated state: want pods Running and none pending, no node
// tainted, no live claim Disrupting, none deleting or uninitialized, no duplicate or leaked
// instance, $/h within consolidatedBound of planCost, all unchanged for quiet. It returns that state,
// when it was reached (its last change, since scaledDown) and how many claims
// were launched since before.
func (s *stack) waitConsolidated(ctx context.Context, t *testing.T, scaledDown time.Time, before consolidationView, want int, planCost float64,
	quiet, timeout time.Duration) (consolidationView, time.Duration, int) {
	start := time.Now()
	seen := map[string]bool{}
	for name := range before.claims {
		seen[name] = true
	}
	launched := 0
	var (
		last       consolidationView
		lastChange = start
		inv        inventory
		why        string
	)
	for {
		v, err := s.viewConsolidation(ctx)
		if err == nil {
			inv, err = s.inventory(ctx)
		}
		if err == nil {
			for name := range v.claims {
				if !seen[name] {
					seen[name] = true
					launched++
				}
			}
			if v.key() != last.key() {
				last, lastChange = v, time.Now()
			}
			why = notConsolidated(v, inv, want, planCost)
			if why == "" && time.Since(lastChange) >= quiet {
				return v, lastChange.Sub(scaledDown), launched
			}
		} else {
			why = err.Error()
		}
		if time.Since(start) > timeout {
			t.Logf("claims at the timeout:%s", s.describeClaims(ctx))
			t.Fatalf("not consolidated %s after the restart: %s (%s; %s; tainted %v; disrupting %v; leaked %v; stuck %v)",
				timeout, why, last, inv, last.tainted, last.disrupting, inv.leaked, inv.stuck)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// notConsolidated says why the cluster is not in its consolidated state yet, or "".
func notConsolidated(v consolidationView, inv inventory, want int, planCost float64) string {
	switch {
	case v.running != want || v.pending > 0:
		return fmt.Sprintf("%d of %d pods running, %d pending", v.running, want, v.pending)
	case len(v.tainted) > 0:
		return fmt.Sprintf("nodes still tainted karpenter.sh/disrupted: %s", strings.Join(v.tainted, ","))
	case len(v.disrupting) > 0:
		return fmt.Sprintf("claims still Disrupting: %s", strings.Join(v.disrupting, ","))
	case v.deleting > 0 || v.uninitialized > 0:
		return fmt.Sprintf("%d claims deleting, %d uninitialized", v.deleting, v.uninitialized)
	case inv.duplicates > 0 || len(inv.leaked) > 0 || len(inv.stuck) > 0 || inv.emptyNodes > 0:
		return fmt.Sprintf("inventory: %s", inv)
	case v.cost > consolidatedBound*planCost:
		return fmt.Sprintf("$%.3f/h is over %.2f × the plan's $%.3f/h", v.cost, consolidatedBound, planCost)
	}
	return ""
}

// keepLogs copies the trial's process logs to dir ($RELIABILITY_KEEP_LOGS), for reading a trial
// that passed.
// farAbovePlan is the ÷ plan above which a trial keeps its manager logs and prints the tail of the
// disruption loop's log (session 15: one trial ended at 1.231 × the plan, with no log left to say why).
const farAbovePlan = 1.10

// keepFarAbovePlan keeps the trial's manager logs (under RELIABILITY_KEEP_LOGS, else the temp dir)
// and logs the last disruption and provisioner lines of the last manager process.
func (s *stack) keepFarAbovePlan(t *testing.T, ratio float64) {
	t.Helper()
	dir := os.Getenv("RELIABILITY_KEEP_LOGS")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "far-above-plan-"+strings.ReplaceAll(t.Name(), "/", "_")+"-"+time.Now().UTC().Format("150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Log(err)
		return
	}
	if out, err := exec.Command("sh", "-c", "cp "+filepath.Join(s.env.LogDir, "*.log")+" "+dir).CombinedOutput(); err != nil {
		t.Logf("keeping logs: %v: %s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(s.env.LogDir, fmt.Sprintf("joist-%d.log", s.starts)))
	if err != nil {
		t.Log(err)
		return
	}
	var tail []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, `"logger":"disruption"`) || strings.Contains(line, `"logger":"provisioner"`) {
			tail = append(tail, line)
		}
	}
	tail = tail[max(0, len(tail)-40):]
	t.Logf("ended at %.3f × the plan (> %.2f): manager logs kept in %s; last %d disruption/provisioner lines:\n%s", ratio, farAbovePlan, dir, len(tail), strings.Join(tail, "\n"))
}

func (s *stack) keepLogs(t *testing.T, dir string) {
	s.kill()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Log(err)
		return
	}
	if out, err := exec.Command("sh", "-c", "cp "+filepath.Join(s.env.LogDir, "*.log")+" "+dir).CombinedOutput(); err != nil {
		t.Logf("keeping logs: %v: %s", err, out)
	}
}
