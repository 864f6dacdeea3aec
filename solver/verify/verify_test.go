package verify_test

import (
	"fmt"
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

func it(name string, cpu int, price float64) *catalog.InstanceType {
	return &catalog.InstanceType{
		Name:     name,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprint(cpu)), corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 4*cpu)), corev1.ResourcePods: resource.MustParse("110")},
		Labels:   map[string]string{v1.LabelArch: "amd64"},
		Offerings: []catalog.Offering{
			{Zone: "zone-a", CapacityType: "spot", Price: price * 0.5, Available: true},
			{Zone: "zone-b", CapacityType: "on-demand", Price: price, Available: true},
		},
	}
}

func pod(name, cpu string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func input(pods ...*corev1.Pod) solver.Input {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	return solver.Input{Pods: pods, NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: []*catalog.InstanceType{it("small", 2, 0.1), it("large", 8, 0.4)}}}}
}

func TestVerifyAcceptsSolverPlan(t *testing.T) {
	in := input(pod("a", "1", nil), pod("b", "1", nil), pod("c", "3", nil))
	if err := verify.Verify(in, solver.Solve(in)); err != nil {
		t.Fatal(err)
	}
}

// Each case corrupts a valid plan; the verifier must name the problem.
func TestVerifyCatchesViolations(t *testing.T) {
	web := map[string]string{"app": "web"}
	anti := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}}}}
		return p
	}
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		corrupt func(in *solver.Input, r *solver.Result)
		want    string
	}{
		{"over-committed", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			r.NewNodeClaims[0].Pods[0] = pod("a", "1", nil)
			r.NewNodeClaims[0].Pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("7")
		}, "over-committed"},
		{"pod missing", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			r.NewNodeClaims[0].Pods = nil
		}, "appears 0 times"},
		{"dearer offering", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			nc := &r.NewNodeClaims[0]
			nc.Offering = nc.InstanceType.Offerings[1]
			r.CostPerHour = nc.Offering.Price
			for i := range nc.Requirements {
				if nc.Requirements[i].Key == v1.LabelTopologyZone {
					nc.Requirements[i].Values = []string{"zone-a", "zone-b"}
				}
			}
		}, "cheaper than the chosen"},
		{"offering outside requirements", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			for i := range r.NewNodeClaims[0].Requirements {
				if r.NewNodeClaims[0].Requirements[i].Key == v1.LabelTopologyZone {
					r.NewNodeClaims[0].Requirements[i].Values = []string{"zone-b"}
				}
			}
		}, "does not satisfy the plan's requirement"},
		{"untolerated taint", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			in.NodePools[0].NodePool.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}, "does not tolerate taint gpu=true:NoSchedule"},
		{"node selector", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			r.NewNodeClaims[0].Pods[0].Spec.NodeSelector = map[string]string{v1.LabelArch: "arm64"}
		}, "node selector/affinity does not match"},
		{"anti-affinity", []*corev1.Pod{anti(pod("a", "1", web)), anti(pod("b", "1", web))}, func(in *solver.Input, r *solver.Result) {
			r.NewNodeClaims[0].Pods = append(r.NewNodeClaims[0].Pods, r.NewNodeClaims[1].Pods...)
			r.CostPerHour -= r.NewNodeClaims[1].Offering.Price
			r.NewNodeClaims = r.NewNodeClaims[:1]
		}, "required anti-affinity"},
		{"limits", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			in.NodePools[0].Remaining = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, "remaining under its limits"},
		{"cost", []*corev1.Pod{pod("a", "1", nil)}, func(in *solver.Input, r *solver.Result) {
			r.CostPerHour = 0.01
		}, "not the sum of the offerings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(tc.pods...)
			r := solver.Solve(in)
			if err := verify.Verify(in, r); err != nil {
				t.Fatalf("valid plan rejected: %v", err)
			}
			tc.corrupt(&in, &r)
			err := verify.Verify(in, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// Spread on a key other than zone and hostname is checked for its skew, independently of the
// solver: two pods spread over capacity types, moved onto one spot node, are rejected; the same
// move is accepted when maxSkew=2 allows it.
func TestVerifyKeySpreadSkew(t *testing.T) {
	web := map[string]string{"app": "web"}
	spreadCT := func(maxSkew int32) func(*corev1.Pod) *corev1.Pod {
		return func(p *corev1.Pod) *corev1.Pod {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: maxSkew, TopologyKey: v1.CapacityTypeLabelKey,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: web}}}
			return p
		}
	}
	for _, tc := range []struct {
		maxSkew int32
		reject  bool
	}{{1, true}, {2, false}} {
		s := spreadCT(tc.maxSkew)
		in := input(s(pod("a", "1", web)), s(pod("b", "1", web)))
		r := solver.Solve(in)
		if err := verify.Verify(in, r); err != nil {
			t.Fatalf("maxSkew %d: valid plan rejected: %v", tc.maxSkew, err)
		}
		if tc.maxSkew == 1 && len(r.NewNodeClaims) != 2 {
			t.Fatalf("maxSkew 1: want one node per capacity type, got %d nodes", len(r.NewNodeClaims))
		}
		// Put every pod on the first spot node.
		spot := -1
		var all []*corev1.Pod
		for i, nc := range r.NewNodeClaims {
			all = append(all, nc.Pods...)
			if nc.Offering.CapacityType == "spot" && spot < 0 {
				spot = i
			}
		}
		if spot < 0 {
			t.Fatalf("maxSkew %d: no spot node in the plan", tc.maxSkew)
		}
		keep := r.NewNodeClaims[spot]
		keep.Pods = all
		r.NewNodeClaims = []solver.NodeClaimPlan{keep}
		r.CostPerHour = keep.Offering.Price
		err := verify.Verify(in, r)
		if tc.reject && (err == nil || !strings.Contains(err.Error(), "topology spread on karpenter.sh/capacity-type violated")) {
			t.Fatalf("maxSkew %d: error %v, want a capacity-type spread violation", tc.maxSkew, err)
		}
		if !tc.reject && err != nil && strings.Contains(err.Error(), "topology spread") {
			t.Fatalf("maxSkew %d: spread wrongly rejected: %v", tc.maxSkew, err)
		}
	}
}

// Required anti-affinity on a custom key is checked by the nodes' label: two pods that must not
// share a rack, merged onto one node, are rejected.
func TestVerifyAntiAffinityOnCustomKey(t *testing.T) {
	const rack = "example.com/rack"
	anti := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: rack, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
		return p
	}
	in := input(anti(pod("a", "1", map[string]string{"app": "web"})), anti(pod("b", "1", map[string]string{"app": "web"})))
	in.NodePools[0].NodePool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: rack, Operator: corev1.NodeSelectorOpIn, Values: []string{"r1", "r2"}}}
	r := solver.Solve(in)
	if err := verify.Verify(in, r); err != nil || len(r.NewNodeClaims) != 2 {
		t.Fatalf("want a valid plan of two nodes, got %d nodes, error %v", len(r.NewNodeClaims), err)
	}
	r.NewNodeClaims[0].Pods = append(r.NewNodeClaims[0].Pods, r.NewNodeClaims[1].Pods...)
	r.CostPerHour -= r.NewNodeClaims[1].Offering.Price
	r.NewNodeClaims = r.NewNodeClaims[:1]
	if err := verify.Verify(in, r); err == nil || !strings.Contains(err.Error(), "required anti-affinity (example.com/rack") {
		t.Fatalf("error %v, want a rack anti-affinity violation", err)
	}
}

// A term's namespaceSelector selects by the input's namespace labels: a pod placed beside a pod of
// a namespace its anti-affinity selects is rejected, and accepted when that namespace's labels do
// not match.
func TestVerifyNamespaceSelector(t *testing.T) {
	db := pod("db", "1", map[string]string{"app": "db"})
	db.Namespace = "team-b"
	api := pod("api", "1", nil)
	api.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}}}}
	in := input(api)
	in.Nodes = []solver.ExistingNode{{Name: "common", Labels: map[string]string{v1.LabelHostname: "common"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}, Pods: []*corev1.Pod{db}}}
	r := solver.Result{ExistingPlacements: []solver.ExistingPlacement{{Node: "common", Pods: []*corev1.Pod{api}}}}
	in.Namespaces = map[string]map[string]string{"team-b": {"team": "b"}}
	if err := verify.Verify(in, r); err == nil || !strings.Contains(err.Error(), "required anti-affinity") {
		t.Fatalf("error %v, want an anti-affinity violation", err)
	}
	in.Namespaces = map[string]map[string]string{"team-b": {"team": "c"}}
	if err := verify.Verify(in, r); err != nil && strings.Contains(err.Error(), "anti-affinity") {
		t.Fatalf("namespace team-b is not selected, yet: %v", err)
	}
}
