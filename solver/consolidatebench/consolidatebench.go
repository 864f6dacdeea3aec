// Package consolidatebench generates the consolidation benchmark's clusters: 1,000 existing nodes
// with their bound pods, either under-used (10,000 pods on 1,000 nodes, ~40% used) or full. Every
// generator is deterministic, so Joist's benchmark and the side-by-side run against upstream
// Karpenter (bench/upstream) see identical clusters.
package consolidatebench

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// Pool is the one NodePool of the benchmark clusters.
const Pool = "bench-consolidation"

// Zones of the default catalog the nodes are spread over.
var Zones = []string{"test-zone-a", "test-zone-b", "test-zone-c"}

// Workload is one Deployment of the under-used cluster.
type Workload struct {
	Name        string
	CPU, Memory string
	// Arch, when set, becomes a kubernetes.io/arch nodeSelector.
	Arch string
	// ZoneSpread adds a maxSkew=1 DoNotSchedule zone topology spread over the workload's pods.
	ZoneSpread bool
}

// Workloads are the ten Deployments of the under-used cluster; pods take them in turn.
var Workloads = []Workload{
	{Name: "web", CPU: "250m", Memory: "512Mi", ZoneSpread: true},
	{Name: "api", CPU: "500m", Memory: "1Gi", ZoneSpread: true},
	{Name: "cart", CPU: "200m", Memory: "256Mi"},
	{Name: "search", CPU: "600m", Memory: "1536Mi", Arch: "amd64"},
	{Name: "catalog", CPU: "400m", Memory: "768Mi", Arch: "arm64"},
	{Name: "auth", CPU: "150m", Memory: "384Mi", ZoneSpread: true},
	{Name: "worker", CPU: "500m", Memory: "2Gi"},
	{Name: "events", CPU: "100m", Memory: "256Mi"},
	{Name: "reports", CPU: "300m", Memory: "1Gi", Arch: "amd64"},
	{Name: "cache", CPU: "250m", Memory: "1536Mi", ZoneSpread: true},
}

// NodePool allows linux nodes of both capacity types, without limits; its budgets are not read by
// the planner (the benchmark passes Budgets explicitly).
func NodePool() *v1.NodePool {
	np := benchdata.NodePool(benchdata.Mixed)
	np.Name, np.UID = Pool, types.UID("nodepool-"+Pool)
	return np
}

// Underused is 1,000 spot nodes (m-8x, amd64 and arm64 alternating, zones in turn) holding 10,000
// pods, ten per node, about 40% of cpu and 25% of memory used. Every node is a candidate and the
// budget allows all of them, so one plan can reach the stable state.
func Underused() solver.ConsolidationInput {
	return UnderusedN(1000, 10)
}

// UnderusedN is Underused with n nodes of perNode pods each.
func UnderusedN(n, perNode int) solver.ConsolidationInput {
	its := catalog.Default()
	byName := map[string]*catalog.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	in := solver.ConsolidationInput{Input: solver.Input{NodePools: []solver.NodePoolInput{{NodePool: NodePool(), InstanceTypes: its}}}}
	nodes := make([]solver.ExistingNode, n)
	for i := range n {
		arch := []string{"amd64", "arm64"}[i%2]
		nodes[i] = node(fmt.Sprintf("under-%04d", i), byName["m-8x-"+arch+"-linux"], Zones[(i/2)%len(Zones)], v1.CapacityTypeSpot)
	}
	// Pods go round-robin over the nodes that admit them, zone-spread workloads over zones in turn.
	next := map[string]int{}
	for p := range n * perNode {
		w := Workloads[p%len(Workloads)]
		i := p / perNode
		if w.Arch != "" && nodes[i].Labels[v1.LabelArch] != w.Arch {
			i ^= 1 // the neighbour has the other arch and the same zone
		}
		pd := pod(fmt.Sprintf("%s-%05d", w.Name, next[w.Name]), w)
		next[w.Name]++
		bind(&nodes[i], pd)
	}
	in.Nodes = nodes
	in.Candidates, in.Budgets = everyNode(nodes)
	return in
}

// Full is 1,000 spot m-8x arm64 nodes (the cheapest per unit for their pods) each filled by ten pods that take all its allocatable: nothing to
// consolidate.
func Full() solver.ConsolidationInput { return FullN(1000) }

// FullN is Full with n nodes.
func FullN(n int) solver.ConsolidationInput {
	its := catalog.Default()
	var m8 *catalog.InstanceType
	for _, it := range its {
		if it.Name == "m-8x-arm64-linux" {
			m8 = it
		}
	}
	alloc := m8.Allocatable()
	cpu := resource.NewMilliQuantity(alloc.Cpu().MilliValue()/10, resource.DecimalSI)
	mem := resource.NewQuantity(alloc.Memory().Value()/10, resource.BinarySI)
	w := Workload{Name: "full"}
	in := solver.ConsolidationInput{Input: solver.Input{NodePools: []solver.NodePoolInput{{NodePool: NodePool(), InstanceTypes: its}}}}
	nodes := make([]solver.ExistingNode, n)
	for i := range nodes {
		nodes[i] = node(fmt.Sprintf("full-%04d", i), m8, Zones[0], v1.CapacityTypeSpot)
		for j := range 10 {
			pd := pod(fmt.Sprintf("full-%04d-%d", i, j), w)
			pd.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *mem}
			bind(&nodes[i], pd)
		}
	}
	in.Nodes = nodes
	in.Candidates, in.Budgets = everyNode(nodes)
	return in
}

// AllPods is every pod of the cluster as pending pods: the same demand placed from scratch (its
// Solve gives the LP bound the benchmark divides by).
func AllPods(in solver.ConsolidationInput) solver.Input {
	out := solver.Input{NodePools: in.NodePools, DaemonSets: in.DaemonSets}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			cp := p.DeepCopy()
			cp.Spec.NodeName = ""
			cp.Status.Phase = corev1.PodPending
			out.Pods = append(out.Pods, cp)
		}
	}
	return out
}

func everyNode(nodes []solver.ExistingNode) ([]solver.Candidate, map[string]solver.DisruptionBudget) {
	cands := make([]solver.Candidate, len(nodes))
	for i, n := range nodes {
		cands[i] = solver.Candidate{Node: n.Name, DisruptionCost: float64(len(n.Pods))}
	}
	all := len(nodes)
	return cands, map[string]solver.DisruptionBudget{Pool: {
		v1.DisruptionReasonEmpty: all, v1.DisruptionReasonUnderutilized: all, v1.DisruptionReasonDrifted: all,
	}}
}

func node(name string, it *catalog.InstanceType, zone, ct string) solver.ExistingNode {
	labels := map[string]string{
		v1.LabelHostname: name, v1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: ct,
		v1.LabelInstanceType: it.Name, v1.NodePoolLabelKey: Pool, v1.NodeInitializedLabelKey: "true",
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	return solver.ExistingNode{Name: name, NodeClaim: name, NodePool: Pool, Labels: labels, Allocatable: it.Allocatable()}
}

func bind(n *solver.ExistingNode, p *corev1.Pod) {
	p.Spec.NodeName = n.Name
	n.Pods = append(n.Pods, p)
}

func pod(name string, w Workload) *corev1.Pod {
	labels := map[string]string{"app": w.Name}
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchdata.Namespace, UID: types.UID("pod-" + name), Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if w.CPU != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(w.CPU), corev1.ResourceMemory: resource.MustParse(w.Memory),
		}
	}
	if w.Arch != "" {
		p.Spec.NodeSelector = map[string]string{v1.LabelArch: w.Arch}
	}
	if w.ZoneSpread {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.Name}},
		}}
	}
	return p
}
