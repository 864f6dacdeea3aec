package benchdata

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

func ec2ByName(t *testing.T) map[string]*catalog.InstanceType {
	t.Helper()
	out := map[string]*catalog.InstanceType{}
	for _, it := range EC2InstanceTypes() {
		if out[it.Name] != nil {
			t.Fatalf("duplicate instance type %s", it.Name)
		}
		out[it.Name] = it
	}
	return out
}

func TestEC2InstanceTypes(t *testing.T) {
	its := ec2ByName(t)
	for _, tc := range []struct {
		name               string
		odPrice            float64
		cpu, memory, pods  string
		allocCPU, allocMem string
	}{
		// m6i.large: 2 vCPU, 8 GiB less 7.5% VM overhead (615 MiB) = 7577 MiB; 29 pods;
		// kube-reserved 60m+10m cpu and 11×29+255 MiB, eviction 100 MiB.
		{"m6i.large", 0.096, "2", "7577Mi", "29", "1930m", "6903Mi"},
		// c6g.medium: 1 vCPU, 2 GiB − 64 MiB Graviton CMA, − 7.5% → 1835 MiB; 8 pods.
		{"c6g.medium", 0.034, "1", "1835Mi", "8", "940m", "1392Mi"},
		// r6i.24xlarge: 96 vCPU, 768 GiB; 737 pods.
		{"r6i.24xlarge", 6.048, "96", "727449Mi", "737", "95690m", "718987Mi"},
		{"t3.medium", 0.0416, "2", "3788Mi", "17", "1930m", "3246Mi"},
		{"g5.xlarge", 1.006, "4", "15155Mi", "58", "3920m", "14162Mi"},
	} {
		it := its[tc.name]
		if it == nil {
			t.Fatalf("%s missing", tc.name)
		}
		for res, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: tc.cpu, corev1.ResourceMemory: tc.memory, corev1.ResourcePods: tc.pods} {
			if got := it.Capacity[res]; got.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s capacity %s = %s, want %s", tc.name, res, got.String(), want)
			}
		}
		alloc := it.Allocatable()
		if got := alloc[corev1.ResourceCPU]; got.Cmp(resource.MustParse(tc.allocCPU)) != 0 {
			t.Errorf("%s allocatable cpu = %s, want %s", tc.name, got.String(), tc.allocCPU)
		}
		if got := alloc[corev1.ResourceMemory]; got.Cmp(resource.MustParse(tc.allocMem)) != 0 {
			t.Errorf("%s allocatable memory = %s, want %s", tc.name, got.String(), tc.allocMem)
		}
		if len(it.Offerings) != 2*len(EC2Zones) {
			t.Fatalf("%s: %d offerings", tc.name, len(it.Offerings))
		}
		for _, o := range it.Offerings {
			switch o.CapacityType {
			case v1.CapacityTypeOnDemand:
				if math.Abs(o.Price-tc.odPrice) > 1e-9 {
					t.Errorf("%s on-demand in %s at %.4f, want %.4f", tc.name, o.Zone, o.Price, tc.odPrice)
				}
			case v1.CapacityTypeSpot:
				if f := o.Price / tc.odPrice; f < 0.299 || f > 0.451 {
					t.Errorf("%s spot in %s at %.3f × on-demand, want 0.30–0.45", tc.name, o.Zone, f)
				}
			}
		}
	}
	// arm64 ~20% cheaper than amd64 of the same shape; linear within a family.
	if r := its["m6g.xlarge"].Offerings[0].Price / its["m6i.xlarge"].Offerings[0].Price; r < 0.78 || r > 0.82 {
		t.Errorf("m6g.xlarge / m6i.xlarge on-demand = %.3f, want ~0.8", r)
	}
	if a, b := its["c6i.8xlarge"].Offerings[0].Price, its["c6i.large"].Offerings[0].Price; math.Abs(a-16*b) > 1e-9 {
		t.Errorf("c6i.8xlarge %.4f is not 16 × c6i.large %.4f", a, b)
	}
	// The spot model differs by zone within a family.
	spot := map[float64]bool{}
	for _, z := range EC2Zones {
		spot[SpotFactor("c7g", z)] = true
	}
	if len(spot) != len(EC2Zones) {
		t.Errorf("c7g spot factors by zone %v are not distinct", spot)
	}
}

func TestRealisticInputs(t *testing.T) {
	for _, shape := range RealisticShapes {
		in := MustInput(shape, 1000)
		if len(in.Pods) != 1000 {
			t.Fatalf("%s: %d pods", shape, len(in.Pods))
		}
		if len(in.DaemonSets) != 5 {
			t.Errorf("%s: %d DaemonSets, want 5", shape, len(in.DaemonSets))
		}
		uids := map[string]bool{}
		for _, p := range in.Pods {
			if uids[string(p.UID)] {
				t.Fatalf("%s: duplicate UID %s", shape, p.UID)
			}
			uids[string(p.UID)] = true
		}
	}
	in := MustInput(EC2Cluster, 10000)
	if len(in.NodePools) != 3 {
		t.Fatalf("cluster: %d NodePools, want 3", len(in.NodePools))
	}
	counts := map[string]int{}
	for _, p := range in.Pods {
		switch {
		case p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil:
			counts["anti"]++
		case p.Spec.NodeSelector["team"] == "data":
			counts["data"]++
		}
		if _, ok := p.Spec.Containers[0].Resources.Requests[ResourceGPU]; ok {
			counts["gpu"]++
			if len(p.Spec.Tolerations) == 0 {
				t.Errorf("%s requests a GPU but does not tolerate the GPU pool's taint", p.Name)
			}
		}
	}
	if counts["anti"] != 60 || counts["gpu"] != 50 || counts["data"] == 0 {
		t.Errorf("cluster/10000: %v, want 60 anti-affine ingress pods, 50 GPU pods and some data-team pods", counts)
	}
}
