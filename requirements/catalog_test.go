package requirements

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

const gpuCount = "joist.dev/instance-gpu-count"

// gpuProbe is the catalog of issue #9: one CPU type without the GPU label, one GPU type with it.
func gpuProbe() []*catalog.InstanceType {
	off := []catalog.Offering{{Zone: "z1", CapacityType: v1.CapacityTypeOnDemand, Price: 1, Available: true}}
	return []*catalog.InstanceType{
		{Name: "cpu.large", Labels: map[string]string{v1.LabelArch: "amd64"}, Offerings: off,
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		{Name: "gpu.large", Labels: map[string]string{v1.LabelArch: "amd64", gpuCount: "1"}, Offerings: off,
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("1")}},
	}
}

// TestMissingKeyRule holds the one rule for keys an instance type does not define, on every operator.
func TestMissingKeyRule(t *testing.T) {
	t.Parallel()
	cat := gpuProbe()
	known := Known(cat)
	cases := []struct {
		key    string
		op     corev1.NodeSelectorOperator
		values []string
		admits string // names of admitted types, in catalog order
	}{
		// A key the catalog defines: a type without it launches nodes without the label.
		{gpuCount, corev1.NodeSelectorOpIn, []string{"1"}, "gpu.large"},
		{gpuCount, corev1.NodeSelectorOpNotIn, []string{"1"}, "cpu.large"},
		{gpuCount, corev1.NodeSelectorOpExists, nil, "gpu.large"},
		{gpuCount, corev1.NodeSelectorOpDoesNotExist, nil, "cpu.large"},
		{gpuCount, corev1.NodeSelectorOpGt, []string{"0"}, "gpu.large"},
		{gpuCount, corev1.NodeSelectorOpLt, []string{"2"}, "gpu.large"},
		{gpuCount, v1.NodeSelectorOpGte, []string{"1"}, "gpu.large"},
		{gpuCount, v1.NodeSelectorOpLte, []string{"1"}, "gpu.large"},
		// A key no type defines is the pool's own label: it never excludes a type.
		{"team", corev1.NodeSelectorOpIn, []string{"a"}, "cpu.large gpu.large"},
		{"team", corev1.NodeSelectorOpExists, nil, "cpu.large gpu.large"},
		{"team", corev1.NodeSelectorOpDoesNotExist, nil, "cpu.large gpu.large"},
		{"team", corev1.NodeSelectorOpGt, []string{"3"}, "cpu.large gpu.large"},
		// Instance type name and well-known keys the catalog defines.
		{v1.LabelInstanceType, corev1.NodeSelectorOpIn, []string{"cpu.large"}, "cpu.large"},
		{v1.LabelArch, corev1.NodeSelectorOpIn, []string{"arm64"}, ""},
		// A zone or capacity type is decided by the offering.
		{v1.LabelTopologyZone, corev1.NodeSelectorOpIn, []string{"z2"}, ""},
		{v1.LabelTopologyZone, corev1.NodeSelectorOpIn, []string{"z1"}, "cpu.large gpu.large"},
	}
	for _, c := range cases {
		s, err := FromAPI([]v1.NodeSelectorRequirementWithMinValues{{Key: c.key, Operator: c.op, Values: c.values}})
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, it := range cat {
			if len(s.Offerings(it, known)) > 0 {
				if got != "" {
					got += " "
				}
				got += it.Name
			}
		}
		if got != c.admits {
			t.Errorf("%s %s %v admits %q, want %q", c.key, c.op, c.values, got, c.admits)
		}
	}
}

// AvailableOfferings keeps the admitted types' available offerings only, in catalog order, and admits
// nothing when the requirements do not parse.
func TestAvailableOfferings(t *testing.T) {
	t.Parallel()
	its := gpuProbe()
	its[0].Offerings = append([]catalog.Offering{{Zone: "z0", CapacityType: v1.CapacityTypeSpot, Price: 0.3}}, its[0].Offerings...)
	got := AvailableOfferings([]v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}, its)
	var names []string
	for _, o := range got {
		names = append(names, o.InstanceType.Name+"/"+o.Offering.Zone)
	}
	if len(names) != 2 || names[0] != "cpu.large/z1" || names[1] != "gpu.large/z1" {
		t.Errorf("offerings %v, want [cpu.large/z1 gpu.large/z1] (the unavailable spot offering left out)", names)
	}
	gpu := AvailableOfferings([]v1.NodeSelectorRequirementWithMinValues{{Key: gpuCount, Operator: corev1.NodeSelectorOpGt, Values: []string{"0"}}}, its)
	if len(gpu) != 1 || gpu[0].InstanceType.Name != "gpu.large" {
		t.Errorf("gpu-count > 0 admitted %d offerings, want gpu.large's only", len(gpu))
	}
	if bad := AvailableOfferings([]v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelArch, Operator: "Near", Values: []string{"x"}}}, its); bad != nil {
		t.Errorf("unparseable requirements admitted %d offerings", len(bad))
	}
}
