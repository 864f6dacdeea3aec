// Command upstream runs Joist's solver and upstream Karpenter's scheduler (sigs.k8s.io/karpenter)
// side by side on the same generated inputs (solver/benchdata) and prints one row per shape and
// size: pods/s, nodes and $/h for both, and the ratios. It is its own Go module so that Joist's
// go.mod never depends on Karpenter. Run it with `make bench-upstream`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/karpenter/pkg/operator/logging"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
	"github.com/joist-dev/joist/test/scenario"
)

func main() {
	log.SetLogger(logging.NopLogger)
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

type row struct {
	shape    benchdata.Shape
	pods     int
	joist    outcome
	upstream outcome
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	shapes := fs.String("shapes", "diverse,uniform,mixed,ec2-services,ec2-caches,ec2-batch,ec2-cluster", "comma-separated shapes: "+joinShapes())
	sizes := fs.String("sizes", "1000,5000,20000", "comma-separated pod counts of the synthetic shapes")
	realisticSizes := fs.String("realistic-sizes", "100,1000,10000", "comma-separated pod counts of the realistic (ec2-*) shapes")
	workers := fs.Int("workers", 1, "upstream scheduler workers (scheduling.NumConcurrentReconciles)")
	joistRuns := fs.Int("joist-runs", 3, "Joist solves per input; the median time is reported")
	fakeTypes := fs.Bool("upstream-fake-types", false, "give upstream its own fake.InstanceTypes(400) instead of the converted benchdata types (cross-check for the diverse shape)")
	markdown := fs.Bool("markdown", false, "print a Markdown table instead of aligned text")
	scenarios := fs.String("scenarios", "", "comma-separated scenario directories of the realistic-p kind (manifests/*.yaml, catalog.yaml; e.g. ../../solver/testdata/realistic-p/p4-large-2k), run after the shapes; -shapes '' runs only these")
	consolidation := fs.Bool("consolidation", false, "run the consolidation side by side (under-used and full clusters) instead")
	consolidationNodes := fs.Int("consolidation-nodes", 1000, "nodes of the consolidation clusters (10 pods each)")
	consolidationClusters := fs.String("consolidation-clusters", "underused,full,roundrobin", "comma-separated consolidation clusters: underused, full, roundrobin")
	consolidationMethods := fs.String("consolidation-methods", "multi,single", "comma-separated upstream consolidation passes to time: multi, single")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *consolidation {
		return runConsolidation(*consolidationNodes, strings.Split(*consolidationClusters, ","), strings.Split(*consolidationMethods, ","), stdout, stderr)
	}
	ns, err := parseSizes(*sizes, "-sizes")
	if err != nil {
		return err
	}
	realisticNs, err := parseSizes(*realisticSizes, "-realistic-sizes")
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "GOMAXPROCS=%d, upstream workers=%d\n", runtime.GOMAXPROCS(0), *workers)
	var rows []row
	for _, name := range strings.Split(*shapes, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		shape := benchdata.Shape(strings.TrimSpace(name))
		shapeNs := ns
		if isRealistic(shape) {
			shapeNs = realisticNs
		}
		for _, n := range shapeNs {
			in, err := benchdata.Input(shape, n)
			if err != nil {
				return err
			}
			r := row{shape: shape, pods: n, joist: runJoistMedian(in, *joistRuns)}
			fmt.Fprintf(stderr, "%s/%d: joist %.3fs; running upstream...\n", shape, n, r.joist.Seconds)
			if r.upstream, err = runUpstream(in, *workers, *fakeTypes); err != nil {
				return fmt.Errorf("%s/%d: %w", shape, n, err)
			}
			fmt.Fprintf(stderr, "%s/%d: upstream %.3fs (+%.3fs setup)\n", shape, n, r.upstream.Seconds, r.upstream.SetupSeconds)
			rows = append(rows, r)
		}
	}
	for _, dir := range strings.Split(*scenarios, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		in, err := scenario.Load(dir)
		if err != nil {
			return err
		}
		name, n := filepath.Base(dir), len(in.Pods)
		r := row{shape: benchdata.Shape(name), pods: n, joist: runJoistMedian(in, *joistRuns)}
		fmt.Fprintf(stderr, "%s (%d pods): joist %.3fs; running upstream...\n", name, n, r.joist.Seconds)
		if r.upstream, err = runUpstream(in, *workers, *fakeTypes); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stderr, "%s: upstream %.3fs (+%.3fs setup)\n", name, r.upstream.Seconds, r.upstream.SetupSeconds)
		rows = append(rows, r)
	}
	if *markdown {
		printMarkdown(stdout, rows)
		return nil
	}
	printText(stdout, rows)
	return nil
}

var header = []string{"shape", "pods",
	"joist pods/s", "joist nodes", "joist $/h", "joist $/h÷LB", "joist unsched",
	"upstream pods/s", "upstream nodes", "upstream $/h", "upstream unsched",
	"speedup", "$/h ratio"}

func cells(r row) []string {
	lb := "-"
	if r.joist.LowerBound > 0 {
		lb = fmt.Sprintf("%.3f", r.joist.CostPerHour/r.joist.LowerBound)
	}
	return []string{string(r.shape), strconv.Itoa(r.pods),
		fmt.Sprintf("%.0f", r.joist.PodsPerSecond(r.pods)), strconv.Itoa(r.joist.Nodes), fmt.Sprintf("%.2f", r.joist.CostPerHour), lb, strconv.Itoa(r.joist.Unschedulable),
		fmt.Sprintf("%.0f", r.upstream.PodsPerSecond(r.pods)), strconv.Itoa(r.upstream.Nodes), fmt.Sprintf("%.2f", r.upstream.CostPerHour), strconv.Itoa(r.upstream.Unschedulable),
		fmt.Sprintf("%.1f×", r.joist.PodsPerSecond(r.pods)/r.upstream.PodsPerSecond(r.pods)),
		fmt.Sprintf("%.3f", r.joist.CostPerHour/r.upstream.CostPerHour)}
}

func printText(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t")+"\t")
	}
	tw.Flush()
}

func printMarkdown(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat(" ---: |", len(header)))
	for _, r := range rows {
		fmt.Fprintln(w, "| "+strings.Join(cells(r), " | ")+" |")
	}
}

// runJoistMedian solves in runs times and reports the first plan with the median solve time (the
// solver is deterministic, so every run yields the same plan).
func runJoistMedian(in solver.Input, runs int) outcome {
	var first outcome
	times := make([]float64, 0, max(runs, 1))
	for i := range max(runs, 1) {
		o := runJoist(in)
		if i == 0 {
			first = o
		}
		times = append(times, o.Seconds)
	}
	sort.Float64s(times)
	first.Seconds = times[len(times)/2]
	return first
}

func parseSizes(list, flagName string) ([]int, error) {
	var ns []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q in %s", s, flagName)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func isRealistic(shape benchdata.Shape) bool {
	for _, r := range benchdata.RealisticShapes {
		if r == shape {
			return true
		}
	}
	return false
}

func joinShapes() string {
	var s []string
	for _, sh := range append(append([]benchdata.Shape(nil), benchdata.Shapes...), benchdata.RealisticShapes...) {
		s = append(s, string(sh))
	}
	return strings.Join(s, ", ")
}
