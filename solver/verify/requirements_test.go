package verify_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

const gpuCount = "joist.dev/instance-gpu-count"

// gpuProbeCatalog is issue #9's probe: a cheap CPU type without the GPU label and a GPU type with it.
func gpuProbeCatalog() []*catalog.InstanceType {
	cpu := it("cpu.xlarge", 4, 0.2)
	gpu := it("gpu.xlarge", 4, 1.0)
	gpu.Labels = map[string]string{v1.LabelArch: "amd64", gpuCount: "1"}
	gpu.Capacity["nvidia.com/gpu"] = resource.MustParse("1")
	return []*catalog.InstanceType{cpu, gpu}
}

// TestSolverAndVerifierAgreeOnRequirements holds the solver (through the requirements package) and
// the verifier's independent matcher against each other: on every operator, on a key the CPU type
// does not define but the catalog knows, and on a key no instance type defines, each requirement put
// on the NodePool and on the pod. The solver must plan the expected type, the verifier must accept
// the plan, and the verifier must reject the same plan moved onto the type the rule excludes.
func TestSolverAndVerifierAgreeOnRequirements(t *testing.T) {
	const cpu, gpu = "cpu.xlarge", "gpu.xlarge"
	cases := []struct {
		key    string
		op     corev1.NodeSelectorOperator
		values []string
		want   string // the type planned; "" = unschedulable
	}{
		{gpuCount, corev1.NodeSelectorOpIn, []string{"1"}, gpu},
		{gpuCount, corev1.NodeSelectorOpNotIn, []string{"1"}, cpu},
		{gpuCount, corev1.NodeSelectorOpExists, nil, gpu},
		{gpuCount, corev1.NodeSelectorOpDoesNotExist, nil, cpu},
		{gpuCount, corev1.NodeSelectorOpGt, []string{"0"}, gpu},
		{gpuCount, corev1.NodeSelectorOpLt, []string{"2"}, gpu},
		{gpuCount, v1.NodeSelectorOpGte, []string{"1"}, gpu},
		{gpuCount, v1.NodeSelectorOpLte, []string{"1"}, gpu},
		{gpuCount, corev1.NodeSelectorOpGt, []string{"1"}, ""},
		{gpuCount, corev1.NodeSelectorOpIn, []string{"2"}, ""},
		{v1.LabelArch, corev1.NodeSelectorOpIn, []string{"arm64"}, ""},
		{v1.LabelInstanceType, corev1.NodeSelectorOpNotIn, []string{cpu}, gpu},
	}
	for _, c := range cases {
		for _, where := range []string{"pool", "pod"} {
			if where == "pod" && (c.op == v1.NodeSelectorOpGte || c.op == v1.NodeSelectorOpLte) {
				continue // Gte and Lte are NodePool operators; a pod's node affinity has only Gt and Lt
			}
			t.Run(where+"/"+c.key+"/"+string(c.op), func(t *testing.T) {
				p := pod("p", "1", nil)
				np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
				if where == "pool" {
					np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: c.key, Operator: c.op, Values: c.values}}
				} else {
					p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: c.key, Operator: c.op, Values: c.values}}}}}}}
				}
				cat := gpuProbeCatalog()
				in := solver.Input{Pods: []*corev1.Pod{p}, NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: cat}}}
				res := solver.Solve(in)
				if err := verify.Verify(in, res); err != nil {
					t.Fatalf("verifier rejects the solver's plan: %v", err)
				}
				if c.want == "" {
					if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 1 {
						t.Fatalf("got %d claims, %d unschedulable; want the pod unschedulable", len(res.NewNodeClaims), len(res.Unschedulable))
					}
					return
				}
				if len(res.NewNodeClaims) != 1 {
					t.Fatalf("got %d claims (unschedulable: %+v), want 1", len(res.NewNodeClaims), res.Unschedulable)
				}
				nc := res.NewNodeClaims[0]
				for _, o := range nc.InstanceTypeOptions {
					if o.Name != c.want {
						t.Errorf("options include %s, want only %s", o.Name, c.want)
					}
				}
				if nc.InstanceType.Name != c.want {
					t.Fatalf("planned %s, want %s", nc.InstanceType.Name, c.want)
				}
				// Moved onto the other type, the plan must be rejected by the verifier.
				other := cat[0]
				if other.Name == c.want {
					other = cat[1]
				}
				res.NewNodeClaims[0].InstanceType, res.NewNodeClaims[0].InstanceTypeOptions = other, []*catalog.InstanceType{other}
				res.NewNodeClaims[0].Offering = other.Offerings[0]
				res.CostPerHour = other.Offerings[0].Price
				for i := range res.NewNodeClaims[0].Requirements {
					if r := &res.NewNodeClaims[0].Requirements[i]; r.Key == v1.LabelInstanceType {
						r.Values = []string{other.Name}
					}
				}
				if err := verify.Verify(in, res); err == nil {
					t.Errorf("verifier accepts the plan moved onto %s", other.Name)
				}
			})
		}
	}
}

// TestPoolOwnKeyNeverExcludesTypes: a requirement on a key no instance type defines (the pool's own
// label) leaves every type launchable; the cheapest is planned and the node carries the label.
func TestPoolOwnKeyNeverExcludesTypes(t *testing.T) {
	for _, c := range []struct {
		op     corev1.NodeSelectorOperator
		values []string
	}{
		{corev1.NodeSelectorOpIn, []string{"a"}},
		{corev1.NodeSelectorOpNotIn, []string{"a"}},
		{corev1.NodeSelectorOpDoesNotExist, nil},
	} {
		np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "example.com/team", Operator: c.op, Values: c.values}}
		p := pod("p", "1", nil)
		p.Spec.NodeSelector = map[string]string{}
		if c.op == corev1.NodeSelectorOpIn {
			p.Spec.NodeSelector["example.com/team"] = "a"
		}
		in := solver.Input{Pods: []*corev1.Pod{p}, NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: gpuProbeCatalog()}}}
		res := solver.Solve(in)
		if err := verify.Verify(in, res); err != nil {
			t.Fatalf("%s: verifier rejects the solver's plan: %v", c.op, err)
		}
		if len(res.NewNodeClaims) != 1 || res.NewNodeClaims[0].InstanceType.Name != "cpu.xlarge" || len(res.NewNodeClaims[0].InstanceTypeOptions) != 2 {
			t.Fatalf("%s: want one claim on cpu.xlarge with both types as options, got %+v", c.op, res.NewNodeClaims)
		}
	}
}

// TestVerifySpreadKeyPresence: a pod with a DoNotSchedule spread is only valid on a node carrying
// the spread's topology key (the kube-scheduler filters out the others).
func TestVerifySpreadKeyPresence(t *testing.T) {
	p := pod("p", "1", map[string]string{"app": "a"})
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "example.com/rack",
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}
	in := input(p)
	in.NodePools[0].NodePool.Spec.Template.Labels = map[string]string{"example.com/rack": "r1"}
	res := solver.Solve(in)
	if err := verify.Verify(in, res); err != nil || len(res.NewNodeClaims) != 1 {
		t.Fatalf("placing: %d claims, verify: %v", len(res.NewNodeClaims), err)
	}
	// The same plan on nodes without the key: no template label, no requirement settling it.
	in.NodePools[0].NodePool.Spec.Template.Labels = nil
	nc := &res.NewNodeClaims[0]
	nc.Requirements = slices.DeleteFunc(nc.Requirements, func(r v1.NodeSelectorRequirementWithMinValues) bool { return r.Key == "example.com/rack" })
	if err := verify.Verify(in, res); err == nil || !strings.Contains(err.Error(), "has no label example.com/rack") {
		t.Fatalf("verify accepted a pod on a node without its spread key: %v", err)
	}
}
