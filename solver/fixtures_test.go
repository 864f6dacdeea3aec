package solver_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

var testZones = []string{"zone-a", "zone-b", "zone-c"}

// instanceType builds a type with on-demand offerings in every test zone at price and spot ones at
// 60% of it. mods adjust it.
func instanceType(name, cpu, mem string, price float64, mods ...func(*catalog.InstanceType)) *catalog.InstanceType {
	it := &catalog.InstanceType{
		Name: name,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(mem),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
		Labels: map[string]string{v1.LabelArch: "amd64", v1.LabelOS: "linux"},
	}
	for _, z := range testZones {
		it.Offerings = append(it.Offerings,
			catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price * 0.6, Available: true})
	}
	for _, m := range mods {
		m(it)
	}
	return it
}

func withLabel(k, v string) func(*catalog.InstanceType) {
	return func(it *catalog.InstanceType) { it.Labels[k] = v }
}

func withCapacity(name corev1.ResourceName, q string) func(*catalog.InstanceType) {
	return func(it *catalog.InstanceType) { it.Capacity[name] = resource.MustParse(q) }
}

func onlyOnDemand(it *catalog.InstanceType) {
	var keep []catalog.Offering
	for _, o := range it.Offerings {
		if o.CapacityType == v1.CapacityTypeOnDemand {
			keep = append(keep, o)
		}
	}
	it.Offerings = keep
}

func onlyZones(zones ...string) func(*catalog.InstanceType) {
	return func(it *catalog.InstanceType) {
		var keep []catalog.Offering
		for _, o := range it.Offerings {
			for _, z := range zones {
				if o.Zone == z {
					keep = append(keep, o)
				}
			}
		}
		it.Offerings = keep
	}
}

// standardTypes: a small 1:4 family.
func standardTypes() []*catalog.InstanceType {
	return []*catalog.InstanceType{
		instanceType("m-1", "1", "4Gi", 0.05),
		instanceType("m-2", "2", "8Gi", 0.10),
		instanceType("m-4", "4", "16Gi", 0.20),
		instanceType("m-8", "8", "32Gi", 0.40),
		instanceType("m-16", "16", "64Gi", 0.80),
	}
}

func nodePool(name string, mods ...func(*v1.NodePool)) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "test", Kind: "TestNodeClass", Name: "default"}
	for _, m := range mods {
		m(np)
	}
	return np
}

func poolReq(key string, op corev1.NodeSelectorOperator, values ...string) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
}

func poolTaint(key, value string, effect corev1.TaintEffect) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func poolWeight(w int32) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Weight = &w }
}

func poolLabel(k, v string) func(*v1.NodePool) {
	return func(np *v1.NodePool) {
		if np.Spec.Template.Labels == nil {
			np.Spec.Template.Labels = map[string]string{}
		}
		np.Spec.Template.Labels[k] = v
	}
}

func poolInput(np *v1.NodePool, types []*catalog.InstanceType) solver.NodePoolInput {
	return solver.NodePoolInput{NodePool: np, InstanceTypes: types}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// pod builds a pending pod with one container requesting cpu and memory.
func pod(name, cpu, mem string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: rl("cpu", cpu, "memory", mem)}}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func pods(n int, prefix, cpu, mem string, mods ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, pod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem, mods...))
	}
	return out
}

func label(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

func nodeSelector(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

// requiredTerms adds required node affinity terms (ORed); each term is a list of expressions.
func requiredTerms(terms ...[]corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = ns
	}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func preferred(weight int32, exprs ...corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: exprs}})
	}
}

func toleration(key, value string, effect corev1.TaintEffect) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		op := corev1.TolerationOpEqual
		if value == "" {
			op = corev1.TolerationOpExists
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	}
}

func spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, sel map[string]string, mods ...func(*corev1.TopologySpreadConstraint)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		c := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}
		for _, m := range mods {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func podAffinity(key string, sel map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}})
	}
}

func podAntiAffinity(key string, sel map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}})
	}
}

func preferredAntiAffinity(weight int32, key string, sel map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}})
	}
}

func hostPortOf(port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
	}
}

func extraRequest(name, q string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(q)
	}
}

func pvc(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func daemonSet(name, cpu, mem string, mods ...func(*corev1.PodSpec)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "d", Resources: corev1.ResourceRequirements{Requests: rl("cpu", cpu, "memory", mem)}}}
	for _, m := range mods {
		m(&ds.Spec.Template.Spec)
	}
	return ds
}

func existingNode(name, zone, cpu, mem string, bound ...*corev1.Pod) solver.ExistingNode {
	return solver.ExistingNode{
		Name:        name,
		Labels:      map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: zone, v1.LabelArch: "amd64", v1.LabelOS: "linux"},
		Allocatable: rl("cpu", cpu, "memory", mem, "pods", "110"),
		Pods:        bound,
	}
}

// solve runs the solver and the verifier; a verifier failure fails the test.
func solve(t testing.TB, in solver.Input) solver.Result {
	t.Helper()
	r := solver.Solve(in)
	if err := verify.Verify(in, r); err != nil {
		t.Fatalf("verifier rejected the plan:\n%v\n%s", err, summary(r))
	}
	return r
}

func summary(r solver.Result) string {
	var b strings.Builder
	for i, nc := range r.NewNodeClaims {
		fmt.Fprintf(&b, "node %d: %s %s %s/%s $%.4f pods=%d\n", i, nc.NodePool, nc.InstanceType.Name, nc.Offering.Zone, nc.Offering.CapacityType, nc.Offering.Price, len(nc.Pods))
	}
	for _, ep := range r.ExistingPlacements {
		fmt.Fprintf(&b, "existing %s: pods=%d\n", ep.Node, len(ep.Pods))
	}
	for _, u := range r.Unschedulable {
		fmt.Fprintf(&b, "unschedulable %s: %s\n", u.Pod.Name, u.Reason)
	}
	fmt.Fprintf(&b, "cost %.4f lower bound %.4f\n", r.CostPerHour, r.LowerBoundPerHour)
	return b.String()
}

func scheduledCount(r solver.Result) int {
	n := 0
	for _, nc := range r.NewNodeClaims {
		n += len(nc.Pods)
	}
	for _, ep := range r.ExistingPlacements {
		n += len(ep.Pods)
	}
	return n
}

// reasonOf returns the reason a pod is unschedulable, or fails the test when it was placed.
func reasonOf(t testing.TB, r solver.Result, name string) string {
	t.Helper()
	for _, u := range r.Unschedulable {
		if u.Pod.Name == name {
			return u.Reason
		}
	}
	t.Fatalf("pod %s was placed, want unschedulable\n%s", name, summary(r))
	return ""
}

func wantReason(t testing.TB, r solver.Result, name, substr string) {
	t.Helper()
	if got := reasonOf(t, r, name); !strings.Contains(got, substr) {
		t.Fatalf("pod %s: reason %q, want it to contain %q", name, got, substr)
	}
}

// nodeOf returns the plan holding pod name (nil if on an existing node or unplaced).
func nodeOf(r solver.Result, name string) *solver.NodeClaimPlan {
	for i := range r.NewNodeClaims {
		for _, p := range r.NewNodeClaims[i].Pods {
			if p.Name == name {
				return &r.NewNodeClaims[i]
			}
		}
	}
	return nil
}

func existingOf(r solver.Result, name string) string {
	for _, ep := range r.ExistingPlacements {
		for _, p := range ep.Pods {
			if p.Name == name {
				return ep.Node
			}
		}
	}
	return ""
}

func mustPlaceAll(t testing.TB, r solver.Result) {
	t.Helper()
	if len(r.Unschedulable) > 0 {
		t.Fatalf("want every pod placed:\n%s", summary(r))
	}
}

func defaultInput(ps ...*corev1.Pod) solver.Input {
	return solver.Input{Pods: ps, NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), standardTypes())}}
}

func resourceQ(s string) resource.Quantity { return resource.MustParse(s) }
