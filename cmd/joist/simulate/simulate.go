// Package simulate is `joist simulate`: it reads NodePools, workloads and existing nodes from YAML,
// runs the solver against an instance-type catalog and prints the plan, offline.
package simulate

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/catalog/azure"
	"github.com/joist-dev/joist/catalog/ec2"
	"github.com/joist-dev/joist/solver"
)

const usageText = `Usage: joist simulate -f PATH [-f PATH...] [--catalog FILE|embedded-ec2 [--region R]] [-o table|json]

Reads NodePools, Pods, Deployments, ReplicaSets, StatefulSets, Jobs, DaemonSets, Nodes and
PersistentVolumes (with --consolidate also NodeClaims, PodDisruptionBudgets, Namespaces and
Guardrails) from YAML or JSON (a file, or a directory searched recursively for .yaml, .yml and
.json files), runs Joist's solver and prints the nodes it would launch, what they cost and which pods
cannot be placed, with the reason. Nothing is sent to a cluster.

Flags:
`

// Options configure a run; Main fills them from flags.
type Options struct {
	// Paths are the input files or directories.
	Paths []string
	// Catalog is an instance-type catalog file; empty means the embedded default catalog.
	Catalog string
	// Region selects the embedded prices of the embedded-ec2 catalog (default us-east-1).
	Region string
	// Output is "table" or "json".
	Output string
	// Solve is the solver; nil means solver.SolveWith timing each pass.
	Solve func(solver.Input) solver.Result
	// Consolidate runs the consolidation what-if on the input's Nodes instead of placing pending pods.
	Consolidate bool
	// MinSavingsFraction (nil: the manager's default) and SpotToSpot are the manager's
	// --consolidation-min-savings and --spot-to-spot-consolidation, for the what-if.
	MinSavingsFraction *float64
	SpotToSpot         bool
}

// Main runs `joist simulate` with args (the words after "simulate") and returns the exit code: 0 on
// success (also when some pods are unschedulable), 1 on bad input, 2 on bad usage.
func Main(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "joist simulate:", err)
		return 2
	}
	if err := Run(opts, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "joist simulate:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (Options, error) {
	var opts Options
	fs := flag.NewFlagSet("joist simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.Func("f", "input file or directory (repeatable)", func(s string) error {
		opts.Paths = append(opts.Paths, s)
		return nil
	})
	fs.StringVar(&opts.Catalog, "catalog", "", "instance-type catalog file (default: the embedded catalog, see docs/catalog.md; \"embedded-azure\": real Azure VM sizes, see docs/azure.md; \""+ec2.CatalogName+"\": real EC2 types, see docs/aws.md)")
	fs.StringVar(&opts.Region, "region", "", "with --catalog "+ec2.CatalogName+": the AWS region whose embedded on-demand prices and zones (REGIONa–c) to use (default us-east-1)")
	fs.StringVar(&opts.Output, "o", "table", "output format: table or json")
	opts.MinSavingsFraction = new(float64)
	fs.Float64Var(opts.MinSavingsFraction, "consolidation-min-savings", solver.DefaultMinSavingsFraction, "with --consolidate: least share (0–1) of the disrupted nodes' price a command must save, as the manager's flag")
	fs.BoolVar(&opts.SpotToSpot, "spot-to-spot-consolidation", false, "with --consolidate: let spot nodes be replaced by a spot node, as the manager's flag (off by default)")
	fs.BoolVar(&opts.Consolidate, "consolidate", false, "what-if: which Nodes (with their bound pods) consolidation would delete or replace, and which object keeps each other node (the disruption controller's policy and planner)")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	switch {
	case fs.NArg() > 0:
		return opts, fmt.Errorf("unexpected argument %q; pass inputs with -f", fs.Arg(0))
	case len(opts.Paths) == 0:
		fs.Usage()
		return opts, errors.New("-f PATH is required")
	case opts.Output != "table" && opts.Output != "json":
		return opts, fmt.Errorf("-o %q: use table or json", opts.Output)
	case opts.Region != "" && opts.Catalog != ec2.CatalogName:
		return opts, fmt.Errorf("--region %s: it selects the prices of --catalog %s; another catalog carries its own", opts.Region, ec2.CatalogName)
	case *opts.MinSavingsFraction < 0 || *opts.MinSavingsFraction >= 1:
		return opts, fmt.Errorf("--consolidation-min-savings %v: use a fraction in [0, 1)", *opts.MinSavingsFraction)
	}
	return opts, nil
}

// Run loads the inputs, solves and writes the plan to stdout; warnings go to stderr.
func Run(opts Options, stdout, stderr io.Writer) error {
	instanceTypes, catalogName, err := loadCatalog(opts.Catalog, opts.Region)
	if err != nil {
		return err
	}
	l := newLoader()
	if err := l.loadPaths(opts.Paths); err != nil {
		return err
	}
	for _, src := range l.objs.ignored {
		fmt.Fprintf(stderr, "joist simulate: ignoring %s: not used by the simulation\n", src)
	}
	snap, err := buildInput(l.objs, instanceTypes)
	if err != nil {
		return err
	}
	in := snap.Input
	if len(in.NodePools) == 0 {
		fmt.Fprintln(stderr, "joist simulate: warning: the input has no NodePool, so no new node can be planned")
	}
	if opts.Consolidate {
		return consolidationWhatIf(in, l.objs, whatIfSettings{minSavings: opts.MinSavingsFraction, spotToSpot: opts.SpotToSpot}, time.Now(), stdout)
	}
	solve := opts.Solve
	if solve == nil {
		solve = func(in solver.Input) solver.Result { return solver.SolveWith(in, solver.Options{Now: time.Now}) }
	}
	start := time.Now()
	res := admit(snap, solve(in))
	elapsed := time.Since(start)

	report := newReport(in, res, elapsed, catalogName, len(instanceTypes))
	if opts.Output == "json" {
		return writeJSON(stdout, report)
	}
	return writeTable(stdout, report, res)
}

func loadCatalog(path, region string) ([]*catalog.InstanceType, string, error) {
	if path == "" {
		return catalog.Default(), "default", nil
	}
	if path == ec2.CatalogName {
		return ec2Catalog(region)
	}
	if path == azure.CatalogName {
		return azure.Catalog(), path, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading catalog: %w", err)
	}
	its, err := catalog.Parse(data)
	if err != nil {
		return nil, "", fmt.Errorf("catalog %s:\n  %s", path, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return its, path, nil
}

// ec2Catalog is the embedded EC2 types with region's on-demand prices and, as the manager's kwok
// provider offers them, spot at an estimated fraction of on-demand. Its name says the region, the
// currency and the prices' date.
func ec2Catalog(region string) ([]*catalog.InstanceType, string, error) {
	if region == "" {
		region = ec2.Embedded().PricesRegion
	}
	its, err := ec2.InstanceTypes(ec2.Options{Region: region, SpotPriceFactor: ec2.EstimatedSpotFactor})
	if err != nil {
		return nil, "", fmt.Errorf("--region: %w (the manager's AWS provider reads other regions' prices from the Pricing API at run time; pass --catalog FILE to simulate with your own)", err)
	}
	prices, _ := ec2.PricesFor(region)
	return its, fmt.Sprintf("%s (%s, %s prices of %s)", ec2.CatalogName, region, prices.Currency, prices.Date.Format(time.DateOnly)), nil
}
