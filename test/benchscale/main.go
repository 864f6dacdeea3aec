// Command benchscale drives the real manager (the joist binary) against a real kube-apiserver and
// etcd (envtest) at several cluster sizes and reports, per size: the manager's peak RSS and
// CPU-seconds (from /proc), apiserver requests by verb (its own metrics), time from the pods' creation
// to all bound, nodes bought against the plan, nodes left empty; and the same for a floor run (the
// planned nodes registered beforehand, no manager). kube-scheduler and KWOK cannot run at these sizes
// on a small machine, so a stand-in binder and node faker take their place (see standIn); the
// report says so. `make bench-scale` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

type size struct {
	pods, nodes int
}

func parseSizes(s string) ([]size, error) {
	var out []size
	for _, f := range strings.Split(s, ",") {
		p, n, ok := strings.Cut(strings.TrimSpace(f), "/")
		pods, err1 := strconv.Atoi(p)
		nodes, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || pods <= 0 || nodes <= 0 || pods%nodes != 0 {
			return nil, fmt.Errorf("-sizes: %q is not PODS/NODES with NODES dividing PODS (e.g. 5000/1000)", f)
		}
		out = append(out, size{pods, nodes})
	}
	return out, nil
}

func main() {
	sizes := flag.String("sizes", "1000/100,5000/1000", "Comma-separated PODS/NODES cluster sizes; the pods are sized so that PODS/NODES fill one 2-cpu node.")
	floor := flag.Bool("floor", true, "Also run the floor at each size: the planned nodes registered beforehand, no manager.")
	joist := flag.String("joist", "bin/joist", "The manager binary.")
	out := flag.String("out", "bin/bench-scale.md", "Where to write the markdown report (also printed).")
	profile := flag.String("profile", "", "Save the manager's pprof CPU profiles (20 s each, while the run lasts) and heap profiles (all bound, settled) in this folder, one sub-folder per size.")
	timeout := flag.Duration("timeout", 30*time.Minute, "Longest wait for all pods bound at one size.")
	var managerArgs argList
	flag.Var(&managerArgs, "manager-arg", "An extra flag for the manager, e.g. -manager-arg=--memory-limit=134217728 (what a 128 MiB container limit passes); repeatable. The report's header lists them.")
	flag.Parse()
	ss, err := parseSizes(*sizes)
	if err != nil {
		fail(err)
	}
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime; its output is not the report
	ctx := context.Background()
	var rows, passRows, timelines []string
	for _, sz := range ss {
		r, err := run(ctx, sz, *joist, *timeout, *profile, managerArgs)
		if err != nil {
			fail(fmt.Errorf("joist at %d pods: %w", sz.pods, err))
		}
		fmt.Println(r.row())
		fmt.Println(r.passRow())
		rows = append(rows, r.row())
		timelines = append(timelines, r.timelineRow())
		passRows = append(passRows, r.passRow())
		if *floor {
			f, err := run(ctx, sz, "", *timeout, "", nil)
			if err != nil {
				fail(fmt.Errorf("floor at %d pods: %w", sz.pods, err))
			}
			fmt.Println(f.row())
			timelines = append(timelines, f.timelineRow())
			rows = append(rows, f.row(), fmt.Sprintf("| | **Joist / floor** | | | | %.2f× | | | |", r.bound.Seconds()/f.bound.Seconds()))
		}
	}
	report := header
	if len(managerArgs) > 0 {
		report = "Manager flags beyond the defaults: `" + strings.Join(managerArgs, " ") + "`.\n\n" + report
	}
	report += strings.Join(rows, "\n") + "\n\n" + timelineHeader + strings.Join(timelines, "\n") + "\n\n" + passHeader +
		strings.Join(passRows, "\n") + "\n"
	fmt.Print("\n" + report)
	if err := os.WriteFile(*out, []byte(report), 0o644); err != nil {
		fail(err)
	}
}

const header = `Stand-ins: kube-scheduler and KWOK do not run at these sizes on this machine; a test binder (binds
pods where Joist nominated them, else first fit, counting nominated room as taken) and a node faker
(marks new Nodes Ready and lifts the not-ready taint, as kube-controller-manager would) replace them. Apiserver requests are all clients' (manager, binder, faker,
pod creation): the floor rows show the harness's own share.

| pods / nodes planned | run | nodes bought | empty at end | peak RSS MiB | pending→all bound | CPU-s | CPU-s per 1k pods | apiserver requests by verb |
|---|---|---|---|---|---|---|---|---|
`

const timelineHeader = `Milestones, seconds after the first pod's creation (first–last; the floor's nodes exist before):

`

const passHeader = `Disruption loop once the pods are bound (every pass so far, then the settle window's passes
alone, with nothing left to place or remove; apiserver requests of all clients by verb and resource
during the settle window, ` + "30 s" + `, when only the manager runs):

| pods / nodes | passes | mean pass | pass p99 (bucket bound) | settle-window passes | their mean | their p99 | apiserver requests in the settle window |
|---|---|---|---|---|---|---|---|
`

// argList is a repeatable string flag.
type argList []string

func (a *argList) String() string     { return strings.Join(*a, " ") }
func (a *argList) Set(v string) error { *a = append(*a, v); return nil }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchscale:", err)
	os.Exit(1)
}
