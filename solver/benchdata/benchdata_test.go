package benchdata

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestUpstreamInstanceTypes(t *testing.T) {
	its := UpstreamInstanceTypes()
	if len(its) != 400 {
		t.Fatalf("got %d instance types, want 400", len(its))
	}
	for _, tc := range []struct {
		index            int
		name             string
		cpu, memory, pod string
	}{
		{0, "fake-it-0", "1", "2Gi", "10"},
		{1, "fake-it-1", "2", "4Gi", "20"},
		{399, "fake-it-399", "400", "800Gi", "4000"},
	} {
		it := its[tc.index]
		if it.Name != tc.name {
			t.Errorf("type %d: name %q, want %q", tc.index, it.Name, tc.name)
		}
		for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tc.cpu, corev1.ResourceMemory: tc.memory, corev1.ResourcePods: tc.pod} {
			if got := it.Capacity[res]; got.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s: %s = %s, want %s", it.Name, res, got.String(), want)
			}
		}
		alloc := it.Allocatable()
		wantCPU := resource.MustParse(tc.cpu)
		wantCPU.Sub(resource.MustParse("100m"))
		if got := alloc[corev1.ResourceCPU]; got.Cmp(wantCPU) != 0 {
			t.Errorf("%s: allocatable cpu %s, want %s", it.Name, got.String(), wantCPU.String())
		}
		if len(it.Offerings) != 5 {
			t.Fatalf("%s: %d offerings, want 5", it.Name, len(it.Offerings))
		}
		cpu := float64(tc.index + 1)
		wantPrice := 0.1*cpu + 0.1*2*cpu*(1<<30)/1e9
		spot := 0
		for _, o := range it.Offerings {
			if math.Abs(o.Price-wantPrice) > 1e-9 || !o.Available {
				t.Errorf("%s: offering %+v, want available at %f", it.Name, o, wantPrice)
			}
			if o.CapacityType == v1.CapacityTypeSpot {
				spot++
				if o.Zone == "test-zone-3" {
					t.Errorf("%s: spot offered in test-zone-3, upstream sells spot in zones 1 and 2 only", it.Name)
				}
			}
		}
		if spot != 2 {
			t.Errorf("%s: %d spot offerings, want 2", it.Name, spot)
		}
	}
}

// kind classifies a diverse pod by the constraint it carries.
func kind(p *corev1.Pod) string {
	switch {
	case len(p.Spec.TopologySpreadConstraints) == 1:
		return "spread/" + p.Spec.TopologySpreadConstraints[0].TopologyKey
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil:
		return "affinity/" + p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil:
		return "anti/" + p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey
	default:
		return "generic"
	}
}

func TestDiversePods(t *testing.T) {
	cpus := map[string]bool{"100m": true, "250m": true, "500m": true, "1": true, "1500m": true}
	mems := map[string]bool{"100Mi": true, "256Mi": true, "512Mi": true, "1Gi": true, "2Gi": true, "4Gi": true}
	for _, tc := range []struct {
		n    int
		want map[string]int
	}{
		{1000, map[string]int{"generic": 200, "spread/topology.kubernetes.io/zone": 200, "spread/kubernetes.io/hostname": 200,
			"affinity/topology.kubernetes.io/zone": 200, "anti/kubernetes.io/hostname": 200}},
		{13, map[string]int{"generic": 5, "spread/topology.kubernetes.io/zone": 2, "spread/kubernetes.io/hostname": 2,
			"affinity/topology.kubernetes.io/zone": 2, "anti/kubernetes.io/hostname": 2}},
	} {
		pods := DiversePods(tc.n)
		if len(pods) != tc.n {
			t.Fatalf("n=%d: got %d pods", tc.n, len(pods))
		}
		got := map[string]int{}
		uids := map[string]bool{}
		for _, p := range pods {
			got[kind(p)]++
			if uids[string(p.UID)] {
				t.Errorf("duplicate UID %s", p.UID)
			}
			uids[string(p.UID)] = true
			req := p.Spec.Containers[0].Resources.Requests
			if c, m := req[corev1.ResourceCPU], req[corev1.ResourceMemory]; !cpus[c.String()] || !mems[m.String()] {
				t.Errorf("%s: requests cpu=%s memory=%s outside upstream's sets", p.Name, c.String(), m.String())
			}
		}
		if !equality.Semantic.DeepEqual(got, tc.want) {
			t.Errorf("n=%d: kinds %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestAntiAffinityPodsRepelEachOther(t *testing.T) {
	for _, p := range DiversePods(50) {
		if kind(p) != "anti/kubernetes.io/hostname" {
			continue
		}
		sel := p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels
		for k, v := range sel {
			if p.Labels[k] != v {
				t.Fatalf("%s: anti-affinity selector %v does not match its own labels %v", p.Name, sel, p.Labels)
			}
		}
	}
}

func TestInputIsDeterministic(t *testing.T) {
	for _, shape := range Shapes {
		a, err := Input(shape, 500)
		if err != nil {
			t.Fatal(err)
		}
		b := MustInput(shape, 500)
		if !equality.Semantic.DeepEqual(a, b) {
			t.Errorf("%s: two generations differ", shape)
		}
		if len(a.Pods) != 500 || len(a.NodePools) != 1 || len(a.NodePools[0].InstanceTypes) == 0 {
			t.Errorf("%s: %d pods, %d pools", shape, len(a.Pods), len(a.NodePools))
		}
		np := a.NodePools[0].NodePool
		if np.Name != "bench-"+string(shape) || np.Spec.Limits != nil || np.Spec.Template.Spec.NodeClassRef == nil {
			t.Errorf("%s: NodePool %s limits=%v nodeClassRef=%v", shape, np.Name, np.Spec.Limits, np.Spec.Template.Spec.NodeClassRef)
		}
	}
}

func TestInputRejectsUnknownShape(t *testing.T) {
	_, err := Input("bogus", 10)
	if err == nil || !strings.Contains(err.Error(), `unknown benchmark shape "bogus"`) {
		t.Fatalf("got %v, want unknown shape error", err)
	}
}

func TestMixedPods(t *testing.T) {
	total := 0
	for _, d := range MixedDeployments {
		total += d.Weight
	}
	if total != 100 || len(MixedDeployments) != 20 {
		t.Fatalf("%d deployments weighing %d, want 20 weighing 100", len(MixedDeployments), total)
	}
	pods := MixedPods(1003)
	if len(pods) != 1003 {
		t.Fatalf("got %d pods, want 1003", len(pods))
	}
	byApp := map[string]int{}
	for _, p := range pods {
		byApp[p.Labels["app"]]++
	}
	// 1000 × 12% = 120 plus one of the three remainder pods.
	if byApp["web-frontend"] != 121 || byApp["admin-ui"] != 10 {
		t.Errorf("web-frontend=%d admin-ui=%d, want 121 and 10", byApp["web-frontend"], byApp["admin-ui"])
	}
	var arm, spread int
	for _, p := range pods {
		if p.Spec.NodeSelector[v1.LabelArch] == "arm64" {
			arm++
		}
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			spread++
		}
	}
	if arm == 0 || spread == 0 {
		t.Errorf("arm64-pinned=%d zone-spread=%d, want both > 0", arm, spread)
	}
}

func TestUniformPods(t *testing.T) {
	pods := UniformPods(3)
	if len(pods) != 3 || pods[0].Name == pods[2].Name {
		t.Fatalf("got %d pods named %q..%q", len(pods), pods[0].Name, pods[2].Name)
	}
	if !equality.Semantic.DeepEqual(pods[0].Spec, pods[2].Spec) {
		t.Errorf("uniform pods differ in spec")
	}
}
