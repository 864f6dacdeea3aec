package simulate

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

const sampleDir = "../../../config/samples/simulate"

// TestSampleJSON runs the real solver on config/samples/simulate and checks the plan's outcome.
func TestSampleJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", sampleDir, "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	// 12 web + 6 api + 3 cache + 8 worker + 2 trainer + 3 report + 3 db + too-big; legacy is bound.
	if r.Pods != 38 {
		t.Errorf("pods = %d, want 38", r.Pods)
	}
	if r.Scheduled+len(r.Unschedulable) != r.Pods {
		t.Errorf("scheduled %d + unschedulable %d != pods %d", r.Scheduled, len(r.Unschedulable), r.Pods)
	}
	if len(r.Unschedulable) != 1 || r.Unschedulable[0].Pod != "shop/too-big" || !strings.Contains(r.Unschedulable[0].Reason, "200") ||
		!strings.Contains(r.Unschedulable[0].Reason, "cpu") {
		t.Errorf("unschedulable = %+v, want only shop/too-big with a reason naming 200 cpu", r.Unschedulable)
	}
	if r.Nodes == 0 || r.Nodes != len(r.NodeClaims) {
		t.Fatalf("nodes = %d, node claims = %d", r.Nodes, len(r.NodeClaims))
	}
	var sum float64
	gpuPods := 0
	for _, nc := range r.NodeClaims {
		sum += nc.PricePerHour
		if nc.InstanceType == "" || nc.Zone == "" || nc.CapacityType == "" || nc.PricePerHour <= 0 || len(nc.Pods) == 0 {
			t.Errorf("incomplete node claim %+v", nc)
		}
		if nc.CPUUtilization <= 0 || nc.CPUUtilization > 1 || nc.MemoryUtilization <= 0 || nc.MemoryUtilization > 1 {
			t.Errorf("%s utilization cpu %v memory %v, want in (0, 1]", nc.InstanceType, nc.CPUUtilization, nc.MemoryUtilization)
		}
		for _, p := range nc.Pods {
			isTrainer := strings.HasPrefix(p, "ml/trainer-")
			if isTrainer != (nc.NodePool == "gpu") {
				t.Errorf("pod %s is on NodePool %s: only trainer pods tolerate the gpu pool's taint and only they need GPUs", p, nc.NodePool)
			}
			if isTrainer {
				gpuPods++
			}
		}
		if nc.NodePool == "gpu" && (!strings.HasPrefix(nc.InstanceType, "g") || nc.CapacityType != "on-demand") {
			t.Errorf("gpu pool launches %s %s, want a g-family on-demand type", nc.InstanceType, nc.CapacityType)
		}
		if nc.NodePool == "general" && strings.HasPrefix(nc.InstanceType, "g") {
			t.Errorf("general pool launches GPU type %s", nc.InstanceType)
		}
	}
	if gpuPods != 2 {
		t.Errorf("%d trainer pods on GPU nodes, want 2", gpuPods)
	}
	if r.CostPerHour <= 0 || r.CostPerHour < sum-1e-9 || r.CostPerHour > sum+1e-9 {
		t.Errorf("costPerHour %v, sum of node prices %v", r.CostPerHour, sum)
	}
	if r.LowerBoundPerHour <= 0 || r.LowerBoundPerHour > r.CostPerHour+1e-9 || r.CostToLowerBound == nil {
		t.Errorf("lower bound %v, cost %v", r.LowerBoundPerHour, r.CostPerHour)
	}
	if len(r.ExistingPlacements) == 1 && r.ExistingPlacements[0].Node != "general-existing-1" {
		t.Errorf("existing placements = %+v", r.ExistingPlacements)
	}
	if r.Catalog != "default" || r.InstanceTypes != len(catalog.Default()) {
		t.Errorf("catalog = %s (%d)", r.Catalog, r.InstanceTypes)
	}
}

// TestSampleTable checks the table shows the nodes, totals and the unschedulable pod's reason.
func TestSampleTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", sampleDir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^#\s+NODEPOOL\s+INSTANCE TYPE\s+ZONE\s+CAPACITY\s+\$/H\s+PODS\s+CPU\s+MEMORY$`),
		regexp.MustCompile(`(?m)^1\s+(general|gpu)\s+\S+-linux\s+test-zone-[abc]\s+(spot|on-demand)\s+\d+\.\d{4}\s+\d+\s+[\d.]+/[\d.]+ \(\d+%\)\s+[\d.]+/[\d.]+Gi \(\d+%\)$`),
		regexp.MustCompile(`(?m)^\d+\s+gpu\s+g\d-`),
		regexp.MustCompile(`(?m)^Pods:\s+38 pending, 37 scheduled \(\d+ on existing nodes, \d+ on new nodes\), 1 unschedulable$`),
		regexp.MustCompile(`(?m)^New nodes:\s+[1-9]\d*, \$\d+\.\d{4}/h$`),
		regexp.MustCompile(`(?m)^Lower bound:\s+\$\d+\.\d{4}/h \(cost ÷ bound = \d\.\d{3}\)$`),
		regexp.MustCompile(`(?m)^Solve time:\s+[\d.]+(µs|ms|s)$`),
		regexp.MustCompile(`(?m)^shop/too-big\s+.*200.*cpu`),
	} {
		if !want.MatchString(out) {
			t.Errorf("table does not match %s:\n%s", want, out)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing for the sample (KWOKNodeClass is not in it)", stderr.String())
	}
}

// TestSamplePlanVerifies runs the independent verifier on the plan the CLI prints.
func TestSamplePlanVerifies(t *testing.T) {
	l := newLoader()
	if err := l.loadPaths([]string{sampleDir}); err != nil {
		t.Fatal(err)
	}
	snap, err := buildInput(l.objs, catalog.Default())
	if err != nil {
		t.Fatal(err)
	}
	in := snap.Input
	res := solver.Solve(in)
	if err := verify.Verify(in, res); err != nil {
		t.Errorf("the sample's plan fails verification: %v", err)
	}
}
