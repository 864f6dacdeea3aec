package simulate

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

func TestMainUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "-f PATH is required"},
		{[]string{"-f", "x", "-o", "yaml"}, 2, `-o "yaml": use table or json`},
		{[]string{"-f", "x", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"-h"}, 0, "Usage: joist simulate -f PATH"},
		{[]string{"-f", "/does/not/exist"}, 1, "reading input: stat /does/not/exist"},
		{[]string{"-f", ".", "--catalog", "/does/not/exist"}, 1, "reading catalog"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("Main(%q) = %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}

func TestMainBadInputNamesTheDocument(t *testing.T) {
	dir := writeFiles(t, map[string]string{"bad.yaml": pool + "---\n" + strings.Replace(pod, "500m", "half", 1)})
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", dir}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr %s", code, stderr.String())
	}
	want := `bad.yaml:11: document 2 (Pod p): spec.containers[0].resources.requests.cpu: "half" is not a quantity`
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q\ndoes not contain %q", stderr.String(), want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q, want nothing on error", stdout.String())
	}
}

func TestMainBadCatalog(t *testing.T) {
	dir := writeFiles(t, map[string]string{"in.yaml": pool, "cat/catalog.yaml": "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot, price: -1}]\n"})
	var stdout, stderr bytes.Buffer
	code := Main([]string{"-f", dir + "/in.yaml", "--catalog", dir + "/cat/catalog.yaml"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), `instanceTypes[0] "a": offerings[0].price -1 is negative`) {
		t.Errorf("code %d, stderr %q", code, stderr.String())
	}
}

// fakeSolve places the first pod on an existing node when there is one, every other pod asking for
// at most 1 cpu on one new node of the first pool, and refuses the rest.
func fakeSolve(in solver.Input) solver.Result {
	var res solver.Result
	pods := in.Pods
	if len(in.Nodes) > 0 && len(pods) > 0 {
		res.ExistingPlacements = []solver.ExistingPlacement{{Node: in.Nodes[0].Name, Pods: pods[:1]}}
		pods = pods[1:]
	}
	var it *catalog.InstanceType
	for _, candidate := range in.NodePools[0].InstanceTypes {
		if candidate.Name == "m-4x-amd64-linux" {
			it = candidate
		}
	}
	plan := solver.NodeClaimPlan{NodePool: in.NodePools[0].NodePool.Name, InstanceType: it, InstanceTypeOptions: []*catalog.InstanceType{it},
		Offering: it.Offerings[0], Requests: corev1.ResourceList{}}
	for _, p := range pods {
		cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		if cpu.Cmp(resource.MustParse("1")) > 0 {
			res.Unschedulable = append(res.Unschedulable, solver.Unschedulable{Pod: p, Reason: "no instance type offers " + cpu.String() + " cpu"})
			continue
		}
		plan.Pods = append(plan.Pods, p)
		for name, q := range p.Spec.Containers[0].Resources.Requests {
			sum := plan.Requests[name]
			sum.Add(q)
			plan.Requests[name] = sum
		}
	}
	res.NewNodeClaims = []solver.NodeClaimPlan{plan}
	res.CostPerHour = plan.Offering.Price
	res.LowerBoundPerHour = plan.Offering.Price / 2
	return res
}

func fakeInput(t *testing.T) string {
	return writeFiles(t, map[string]string{"in.yaml": pool + "---\n" + deployment("web", "3", "{cpu: 500m, memory: 1Gi}") +
		"---\n" + deployment("big", "1", "{cpu: \"64\"}") + `---
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
`})
}

func TestRunTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := Run(Options{Paths: []string{fakeInput(t)}, Output: "table", Solve: fakeSolve}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`Solve time:\s+\S+`).ReplaceAllString(stdout.String(), "Solve time: X")
	want := `#  NODEPOOL  INSTANCE TYPE     ZONE         CAPACITY  $/H     PODS  CPU              MEMORY
1  default   m-4x-amd64-linux  test-zone-a  spot      0.0688  2     1.00/3.92 (26%)  2.00/14.97Gi (13%)

EXISTING NODE  NEW PODS
node-1         1

Pods:         4 pending, 3 scheduled (1 on existing nodes, 2 on new nodes), 1 unschedulable
New nodes:    1, $0.0688/h
Lower bound:  $0.0344/h (cost ÷ bound = 2.000)
Solve time: X
Catalog:      default (69 instance types)

UNSCHEDULABLE POD  REASON
ns/big-` // the hash follows
	if !strings.HasPrefix(got, want) {
		t.Errorf("table:\n%s\nwant prefix:\n%s", got, want)
	}
	if !strings.Contains(got, "-0  no instance type offers 64 cpu\n") {
		t.Errorf("table does not list big's reason:\n%s", got)
	}
}

func TestRunJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := Run(Options{Paths: []string{fakeInput(t)}, Output: "json", Solve: fakeSolve}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if r.Pods != 4 || r.Scheduled != 3 || r.Nodes != 1 || len(r.Unschedulable) != 1 || r.Seconds <= 0 {
		t.Errorf("report = %+v", r)
	}
	if u := r.Unschedulable[0]; !strings.HasPrefix(u.Pod, "ns/big-") || u.Reason != "no instance type offers 64 cpu" {
		t.Errorf("unschedulable = %+v", u)
	}
	nc := r.NodeClaims[0]
	if nc.NodePool != "default" || nc.InstanceType != "m-4x-amd64-linux" || nc.Zone != "test-zone-a" || nc.CapacityType != "spot" ||
		nc.PricePerHour != 0.06883 || len(nc.Pods) != 2 || nc.Requests["cpu"] != "1" || nc.Allocatable["cpu"] != "3920m" {
		t.Errorf("node claim = %+v", nc)
	}
	if nc.CPUUtilization < 0.255 || nc.CPUUtilization > 0.256 {
		t.Errorf("cpu utilization = %v, want 1/3.92", nc.CPUUtilization)
	}
	if r.CostToLowerBound == nil || *r.CostToLowerBound != 2 || r.CostPerHour != 0.06883 {
		t.Errorf("cost %v, bound %v, ratio %v", r.CostPerHour, r.LowerBoundPerHour, r.CostToLowerBound)
	}
	if len(r.ExistingPlacements) != 1 || r.ExistingPlacements[0].Node != "node-1" {
		t.Errorf("existing placements = %+v", r.ExistingPlacements)
	}
	// The documented field names, checked on the raw JSON.
	var raw map[string]any
	_ = json.Unmarshal(stdout.Bytes(), &raw)
	for _, key := range []string{"pods", "scheduled", "unschedulable", "nodeClaims", "costPerHour", "lowerBoundPerHour", "seconds"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("JSON has no %q field", key)
		}
	}
}

func TestTableGroupsUnschedulablePodsOfOneWorkload(t *testing.T) {
	dir := writeFiles(t, map[string]string{"in.yaml": pool + "---\n" + deployment("big", "5", "{cpu: \"64\"}") + "---\n" +
		deployment("huge", "1", "{cpu: \"128\"}") + "---\n" + strings.Replace(pod, "500m", "\"96\"", 1)})
	solve := func(in solver.Input) solver.Result {
		var res solver.Result
		for _, p := range in.Pods {
			cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			res.Unschedulable = append(res.Unschedulable, solver.Unschedulable{Pod: p, Reason: "too big: " + cpu.String()})
		}
		return res
	}
	var stdout, stderr bytes.Buffer
	if err := Run(Options{Paths: []string{dir}, Output: "table", Solve: solve}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^(default/p|ns/big-\w+-0 \+4 more|ns/huge-\w+-0)\s+too big: (96|64|128)$`).FindAllString(stdout.String(), -1)
	if len(rows) != 3 {
		t.Errorf("want 3 grouped rows (p, big +4 more, huge), got %q in:\n%s", rows, stdout.String())
	}
	var r Report
	stdout.Reset()
	if err := Run(Options{Paths: []string{dir}, Output: "json", Solve: solve}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || len(r.Unschedulable) != 7 {
		t.Errorf("JSON lists %d unschedulable pods (err %v), want all 7", len(r.Unschedulable), err)
	}
}

func TestRunWarnsAboutIgnoredObjects(t *testing.T) {
	dir := writeFiles(t, map[string]string{"in.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n---\n" + pod})
	var stdout, stderr bytes.Buffer
	solve := func(in solver.Input) solver.Result {
		return solver.Result{Unschedulable: []solver.Unschedulable{{Pod: in.Pods[0], Reason: "no NodePool"}}}
	}
	if err := Run(Options{Paths: []string{dir}, Output: "table", Solve: solve}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ignoring " + dir + "/in.yaml:1: document 1 (ConfigMap cfg): not used by the simulation", "the input has no NodePool"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not contain %q", stderr.String(), want)
		}
	}
	if !strings.Contains(stdout.String(), "default/p          no NodePool") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// The JSON report lists the solver's passes in order, timed, with their cost effect and budgets.
func TestRunJSONReportsPasses(t *testing.T) {
	var stdout, stderr bytes.Buffer
	in := writeFiles(t, map[string]string{"in.yaml": pool + "---\n" + deployment("web", "6", "{cpu: 500m, memory: 1Gi}")})
	if err := Run(Options{Paths: []string{in}, Output: "json"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	names := map[string]Pass{}
	prevAfter := 0.0
	for i, p := range r.Passes {
		names[p.Name] = p
		if p.CostBefore != prevAfter {
			t.Errorf("pass %d (%s) starts at $%.4f/h, the previous pass ended at $%.4f/h", i, p.Name, p.CostBefore, prevAfter)
		}
		prevAfter = p.CostAfter
		if !p.Ran && p.Note == "" {
			t.Errorf("pass %s did not run and says not why", p.Name)
		}
		if p.CutShort != (p.Shortfall != "") {
			t.Errorf("pass %s: cutShort %t but shortfall %q", p.Name, p.CutShort, p.Shortfall)
		}
	}
	for _, want := range []string{"place", "split", "pattern-repack", "rebalance+drain", "lower-bound"} {
		if p, ok := names[want]; !ok || !p.Ran {
			t.Errorf("pass %s missing or not run: %+v", want, r.Passes)
		}
	}
	if names["place"].Seconds <= 0 || names["place"].CostAfter <= 0 {
		t.Errorf("place pass not timed or priced: %+v", names["place"])
	}
	if prevAfter != r.CostPerHour {
		t.Errorf("passes end at $%.4f/h, the plan costs $%.4f/h", prevAfter, r.CostPerHour)
	}
	var raw map[string]any
	_ = json.Unmarshal(stdout.Bytes(), &raw)
	first := raw["passes"].([]any)[0].(map[string]any)
	for _, key := range []string{"name", "ran", "seconds", "costBefore", "costAfter", "cutShort"} {
		if _, ok := first[key]; !ok {
			t.Errorf("pass JSON has no %q field: %v", key, first)
		}
	}
}
