// Command benche2e measures Joist end to end (`make bench-e2e`): on a fresh control plane with KWOK,
// Deployments totalling 1,000 pods are created and the time to the first NodeClaim and to the last
// pod Running is taken, with the node count, $/hour against the solver's own plan, and the manager
// process's peak RSS and CPU seconds. It reports each run and the median of -runs runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/joist-dev/joist/test/env"
)

func main() {
	runs := flag.Int("runs", 3, "Number of runs, each on a fresh control plane.")
	joist := flag.String("joist", "bin/joist", "Path of the joist binary (relative paths are from the repository root).")
	timeout := flag.Duration("timeout", 3*time.Minute, "Give up on a run after this long.")
	flag.Var(&managerArgs, "manager-arg", "Extra flag for the joist manager (repeatable), e.g. -manager-arg=--batch-idle-duration=500ms.")
	flag.BoolVar(&requestStats, "request-stats", false, "Also print the apiserver's request counts by verb and resource.")
	flag.BoolVar(&uniform, "uniform", false, "One Deployment of 1,000 identical pods (250m, 512Mi) instead of the five sizes: every planned node holds one interchangeable class.")
	flag.BoolVar(&preprovisioned, "preprovisioned", false, "Floor mode: register the solver's planned nodes first and run no manager; times are what the stack itself needs.")
	withFloor := flag.Bool("floor", false, "Alternate each run with a floor run (-preprovisioned) and print Joist's median time to all Running as a multiple of the floor's.")
	flag.StringVar(&traceDir, "trace-scheduler", "", "Keep each run's kube-scheduler log at -v=3 and its queue metrics sampled every 200ms in this folder (the tracing costs the scheduler time: not for published figures).")
	flag.StringVar(&keepLogs, "keep-logs", "", "Copy each run's manager log into this folder.")
	flag.BoolVar(&scaleDown, "scale-down", false, "Consolidation mode: build the 1,000-pod cluster, scale it to 300 pods, time until the consolidated state and compare its $/h with the solver's plan for the 300 pods from scratch.")
	flag.Parse()
	env.DiscardLogs()
	if traceDir != "" {
		if err := os.MkdirAll(traceDir, 0o755); err != nil {
			fail(fmt.Errorf("-trace-scheduler: %w", err))
		}
	}
	if keepLogs != "" {
		// Made before any run: a run whose log cannot be kept fails without printing its report.
		if err := os.MkdirAll(keepLogs, 0o755); err != nil {
			fail(fmt.Errorf("-keep-logs: %w", err))
		}
	}
	root, err := env.RepoRoot()
	if err != nil {
		fail(err)
	}
	binary := *joist
	if !filepath.IsAbs(binary) {
		binary = filepath.Join(root, binary)
	}
	// Ctrl-C or SIGTERM ends the run through its deferred cleanup, which stops etcd and the
	// kube-apiserver; they are not children that die with this process.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if scaleDown {
		runScaleDowns(sigCtx, binary, *runs, *timeout)
		return
	}
	var results, floors []result
	for i := 0; i < *runs; i++ {
		if *withFloor {
			ctx, cancel := context.WithTimeout(sigCtx, *timeout)
			r, err := runPreprovisioned(ctx)
			cancel()
			if err != nil {
				fail(fmt.Errorf("floor run %d: %w", i+1, err))
			}
			fmt.Printf("floor %d: %s\n", i+1, r)
			floors = append(floors, r)
		}
		ctx, cancel := context.WithTimeout(sigCtx, *timeout)
		r, err := runOnce(ctx, binary)
		cancel()
		if err != nil {
			fail(fmt.Errorf("run %d: %w", i+1, err))
		}
		fmt.Printf("run %d: %s\n", i+1, r)
		results = append(results, r)
	}
	m := median(results)
	fmt.Printf("median of %d: %s\n", len(results), m)
	if len(floors) > 0 {
		f := median(floors)
		fmt.Printf("floor median of %d: all 1000 bound %.1fs, Running %.1fs; Joist's time to all Running is %.2f× the floor's\n",
			len(floors), f.allBound.Seconds(), f.allRunning.Seconds(), m.allRunning.Seconds()/f.allRunning.Seconds())
		fmt.Printf("median phases, floor: %s\n", f.phases)
		fmt.Printf("median phases, Joist: %s\n", m.phases)
		fmt.Printf("median of the per-pair ratios (run i ÷ floor i): %.2f×\n", pairRatio(results, floors))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-e2e:", err)
	os.Exit(1)
}

// requestStats prints the apiserver's request counts after each run.
var requestStats bool

// managerArgs are extra flags for the manager.
var managerArgs stringList

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint([]string(*l)) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// result is one run's measurements.
type result struct {
	firstClaim, allBound, allRunning time.Duration
	nodes, planNodes, empty          int
	cost, planCost                   float64
	peakRSSMiB, cpuSeconds           float64
	timeline                         string
	phases                           phases
}

func (r result) String() string {
	return fmt.Sprintf("first NodeClaim %.1fs, all 1000 bound %.1fs, Running %.1fs, %d nodes (%d empty) $%.3f/h (solver plan: %d nodes $%.3f/h), manager peak RSS %.0f MiB, %.1f CPU-s",
		r.firstClaim.Seconds(), r.allBound.Seconds(), r.allRunning.Seconds(), r.nodes, r.empty, r.cost, r.planNodes, r.planCost, r.peakRSSMiB, r.cpuSeconds) +
		timelineSuffix("phases: "+r.phases.String()) + timelineSuffix(r.timeline)
}

func timelineSuffix(t string) string {
	if t == "" {
		return ""
	}
	return "\n       " + t
}

// median takes each measurement's median independently.
func median(rs []result) result {
	ps := make([]phases, len(rs))
	for i, r := range rs {
		ps[i] = r.phases
	}
	pick := func(get func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return result{
		firstClaim: time.Duration(pick(func(r result) float64 { return float64(r.firstClaim) })),
		allBound:   time.Duration(pick(func(r result) float64 { return float64(r.allBound) })),
		allRunning: time.Duration(pick(func(r result) float64 { return float64(r.allRunning) })),
		nodes:      int(pick(func(r result) float64 { return float64(r.nodes) })),
		planNodes:  rs[0].planNodes,
		cost:       pick(func(r result) float64 { return r.cost }),
		planCost:   rs[0].planCost,
		peakRSSMiB: pick(func(r result) float64 { return r.peakRSSMiB }),
		cpuSeconds: pick(func(r result) float64 { return r.cpuSeconds }),
		phases:     medianPhases(ps),
	}
}

// pairRatio is the median over the alternating pairs of Joist's time to all Running divided by its
// neighbouring floor run's: load on the machine drifts, and a pair sees the same load.
func pairRatio(results, floors []result) float64 {
	var v []float64
	for i := range results {
		if i < len(floors) {
			v = append(v, results[i].allRunning.Seconds()/floors[i].allRunning.Seconds())
		}
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
