package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/solver"
)

// Report is the JSON output of `joist simulate -o json`; docs/simulate.md documents it.
type Report struct {
	// Pods is the number of pending pods the solver was asked to place.
	Pods int `json:"pods"`
	// Scheduled counts pods placed on existing nodes or new nodes.
	Scheduled          int                 `json:"scheduled"`
	Unschedulable      []UnschedulablePod  `json:"unschedulable"`
	ExistingPlacements []ExistingPlacement `json:"existingPlacements"`
	NodeClaims         []NodeClaim         `json:"nodeClaims"`
	// Nodes is len(NodeClaims).
	Nodes             int     `json:"nodes"`
	CostPerHour       float64 `json:"costPerHour"`
	LowerBoundPerHour float64 `json:"lowerBoundPerHour"`
	// CostToLowerBound is CostPerHour / LowerBoundPerHour, null when the bound is zero.
	CostToLowerBound *float64 `json:"costToLowerBound"`
	// Seconds is the wall-clock time of the solve alone (not reading or printing).
	Seconds float64 `json:"seconds"`
	// Catalog is "default" or the --catalog file; InstanceTypes its size.
	Catalog       string `json:"catalog"`
	InstanceTypes int    `json:"instanceTypes"`
	// Passes are the solver's passes in order: which ran, how long each took, what each did to
	// the cost, and whether a work budget cut one short (and by how much).
	Passes []Pass `json:"passes"`
}

// Pass is one pass of the solve (solver.PassReport).
type Pass struct {
	Name       string  `json:"name"`
	Ran        bool    `json:"ran"`
	Note       string  `json:"note,omitempty"`
	Seconds    float64 `json:"seconds"`
	CostBefore float64 `json:"costBefore"`
	CostAfter  float64 `json:"costAfter"`
	Work       float64 `json:"work,omitempty"`
	Budget     float64 `json:"budget,omitempty"`
	CutShort   bool    `json:"cutShort"`
	Shortfall  string  `json:"shortfall,omitempty"`
}

// UnschedulablePod is a pod the solver could not place.
type UnschedulablePod struct {
	Pod    string `json:"pod"` // namespace/name
	Reason string `json:"reason"`
}

// ExistingPlacement is pods placed on a node that already exists.
type ExistingPlacement struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"`
}

// NodeClaim is one new node the plan launches.
type NodeClaim struct {
	NodePool     string   `json:"nodePool"`
	InstanceType string   `json:"instanceType"`
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	PricePerHour float64  `json:"pricePerHour"`
	Pods         []string `json:"pods"`
	// InstanceTypeOptions are every type that holds the pods, cheapest first.
	InstanceTypeOptions []string `json:"instanceTypeOptions"`
	// Requests are the pods' requests plus DaemonSet overhead; Allocatable the chosen type's.
	Requests    map[string]string `json:"requests"`
	Allocatable map[string]string `json:"allocatable"`
	// CPUUtilization and MemoryUtilization are requests ÷ allocatable, 0–1.
	CPUUtilization    float64 `json:"cpuUtilization"`
	MemoryUtilization float64 `json:"memoryUtilization"`
}

func newReport(in solver.Input, res solver.Result, elapsed time.Duration, catalogName string, catalogSize int) Report {
	r := Report{
		Pods:               len(in.Pods),
		Unschedulable:      []UnschedulablePod{},
		ExistingPlacements: []ExistingPlacement{},
		NodeClaims:         []NodeClaim{},
		Nodes:              len(res.NewNodeClaims),
		CostPerHour:        res.CostPerHour,
		LowerBoundPerHour:  res.LowerBoundPerHour,
		Seconds:            elapsed.Seconds(),
		Catalog:            catalogName,
		InstanceTypes:      catalogSize,
		Passes:             []Pass{},
	}
	for _, p := range res.Passes {
		r.Passes = append(r.Passes, Pass{Name: p.Name, Ran: p.Ran, Note: p.Note, Seconds: p.Duration.Seconds(),
			CostBefore: p.CostBefore, CostAfter: p.CostAfter, Work: p.Work, Budget: p.Budget, CutShort: p.CutShort, Shortfall: p.Shortfall})
	}
	if res.LowerBoundPerHour > 0 {
		ratio := res.CostPerHour / res.LowerBoundPerHour
		r.CostToLowerBound = &ratio
	}
	for _, u := range res.Unschedulable {
		r.Unschedulable = append(r.Unschedulable, UnschedulablePod{Pod: podKey(u.Pod), Reason: u.Reason})
	}
	for _, p := range res.ExistingPlacements {
		r.ExistingPlacements = append(r.ExistingPlacements, ExistingPlacement{Node: p.Node, Pods: podKeys(p.Pods)})
		r.Scheduled += len(p.Pods)
	}
	for _, nc := range res.NewNodeClaims {
		r.Scheduled += len(nc.Pods)
		out := NodeClaim{
			NodePool:     nc.NodePool,
			Zone:         nc.Offering.Zone,
			CapacityType: nc.Offering.CapacityType,
			PricePerHour: nc.Offering.Price,
			Pods:         podKeys(nc.Pods),
			Requests:     quantities(nc.Requests),
		}
		for _, it := range nc.InstanceTypeOptions {
			out.InstanceTypeOptions = append(out.InstanceTypeOptions, it.Name)
		}
		if nc.InstanceType != nil {
			alloc := nc.InstanceType.Allocatable()
			out.InstanceType = nc.InstanceType.Name
			out.Allocatable = quantities(alloc)
			out.CPUUtilization = utilization(nc.Requests, alloc, corev1.ResourceCPU)
			out.MemoryUtilization = utilization(nc.Requests, alloc, corev1.ResourceMemory)
		}
		r.NodeClaims = append(r.NodeClaims, out)
	}
	return r
}

func podKeys(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = podKey(p)
	}
	return out
}

func quantities(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}

func utilization(requests, alloc corev1.ResourceList, name corev1.ResourceName) float64 {
	a, ok := alloc[name]
	if !ok || a.IsZero() {
		return 0
	}
	r := requests[name]
	return float64(r.MilliValue()) / float64(a.MilliValue())
}

func writeJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the plan for people: one row per new node, then existing-node placements,
// totals and the unschedulable pods with their reasons.
func writeTable(w io.Writer, r Report, res solver.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.NodeClaims) > 0 {
		fmt.Fprintln(tw, "#\tNODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/H\tPODS\tCPU\tMEMORY")
		for i, nc := range r.NodeClaims {
			plan := res.NewNodeClaims[i]
			var alloc corev1.ResourceList
			if plan.InstanceType != nil {
				alloc = plan.InstanceType.Allocatable()
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.4f\t%d\t%s\t%s\n", i+1, nc.NodePool, nc.InstanceType, nc.Zone, nc.CapacityType,
				nc.PricePerHour, len(nc.Pods),
				usage(plan.Requests, alloc, corev1.ResourceCPU, cores),
				usage(plan.Requests, alloc, corev1.ResourceMemory, gib))
		}
		fmt.Fprintln(tw)
	}
	if len(r.ExistingPlacements) > 0 {
		fmt.Fprintln(tw, "EXISTING NODE\tNEW PODS")
		for _, p := range r.ExistingPlacements {
			fmt.Fprintf(tw, "%s\t%d\n", p.Node, len(p.Pods))
		}
		fmt.Fprintln(tw)
	}
	onExisting := 0
	for _, p := range r.ExistingPlacements {
		onExisting += len(p.Pods)
	}
	fmt.Fprintf(tw, "Pods:\t%d pending, %d scheduled (%d on existing nodes, %d on new nodes), %d unschedulable\n",
		r.Pods, r.Scheduled, onExisting, r.Scheduled-onExisting, len(r.Unschedulable))
	ratio := "n/a"
	if r.CostToLowerBound != nil {
		ratio = fmt.Sprintf("%.3f", *r.CostToLowerBound)
	}
	fmt.Fprintf(tw, "New nodes:\t%d, $%.4f/h\n", r.Nodes, r.CostPerHour)
	fmt.Fprintf(tw, "Lower bound:\t$%.4f/h (cost ÷ bound = %s)\n", r.LowerBoundPerHour, ratio)
	fmt.Fprintf(tw, "Solve time:\t%s\n", formatDuration(r.Seconds))
	for _, p := range r.Passes {
		if p.CutShort {
			fmt.Fprintf(tw, "Cut short:\t%s: %s (work budget %.3g)\n", p.Name, p.Shortfall, p.Budget)
		}
	}
	fmt.Fprintf(tw, "Catalog:\t%s (%d instance types)\n", r.Catalog, r.InstanceTypes)
	if len(r.Unschedulable) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "UNSCHEDULABLE POD\tREASON")
		for _, g := range groupUnschedulable(res.Unschedulable) {
			name := podKey(g.first)
			if g.count > 1 {
				name += fmt.Sprintf(" +%d more", g.count-1)
			}
			fmt.Fprintf(tw, "%s\t%s\n", name, g.reason)
		}
	}
	return tw.Flush()
}

func cores(q resource.Quantity) float64 { return float64(q.MilliValue()) / 1000 }
func gib(q resource.Quantity) float64   { return float64(q.Value()) / (1 << 30) }

// usage prints "requested/allocatable (percent)" for one resource.
func usage(requests, alloc corev1.ResourceList, name corev1.ResourceName, unit func(resource.Quantity) float64) string {
	a, ok := alloc[name]
	if !ok || a.IsZero() {
		return "-"
	}
	r := requests[name]
	suffix := ""
	if name == corev1.ResourceMemory {
		suffix = "Gi"
	}
	return fmt.Sprintf("%.2f/%.2f%s (%.0f%%)", unit(r), unit(a), suffix, 100*utilization(requests, alloc, name))
}

func formatDuration(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

type unschedulableGroup struct {
	first  *corev1.Pod
	reason string
	count  int
}

// groupUnschedulable folds pods of the same workload refused for the same reason into one row, in
// order of first appearance, so a 5,000-replica Deployment that does not fit is one line.
func groupUnschedulable(us []solver.Unschedulable) []*unschedulableGroup {
	var out []*unschedulableGroup
	index := map[[2]string]*unschedulableGroup{}
	for _, u := range us {
		owner := string(u.Pod.UID)
		if ref := metav1.GetControllerOf(u.Pod); ref != nil {
			owner = u.Pod.Namespace + "/" + ref.Kind + "/" + ref.Name
		}
		key := [2]string{owner, u.Reason}
		if g, ok := index[key]; ok {
			g.count++
			continue
		}
		g := &unschedulableGroup{first: u.Pod, reason: u.Reason, count: 1}
		index[key] = g
		out = append(out, g)
	}
	return out
}
