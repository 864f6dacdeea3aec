package cloudprovider

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

const gpuCount = "joist.dev/instance-gpu-count"

func probeCatalog() []*catalog.InstanceType {
	off := func(price float64) []catalog.Offering {
		return []catalog.Offering{
			{Zone: "z1", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: "z2", CapacityType: v1.CapacityTypeSpot, Price: price / 2, Available: true},
		}
	}
	return []*catalog.InstanceType{
		{Name: "cpu.xlarge", Labels: map[string]string{v1.LabelArch: "amd64"}, Offerings: off(0.2)},
		{Name: "gpu.xlarge", Labels: map[string]string{v1.LabelArch: "amd64", gpuCount: "1"}, Offerings: off(1)},
	}
}

// TestLaunchOptionsGPUPoolProbe is issue #9's probe at the launch layer: a NodeClaim of a GPU pool
// must never launch the CPU type, whose catalog entry lacks the GPU label.
func TestLaunchOptionsGPUPoolProbe(t *testing.T) {
	pool := v1.NodeSelectorRequirementWithMinValues{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}
	team := v1.NodeSelectorRequirementWithMinValues{Key: "example.com/team", Operator: corev1.NodeSelectorOpIn, Values: []string{"ml"}}
	cases := []struct {
		name string
		req  v1.NodeSelectorRequirementWithMinValues
		want []string
	}{
		{"In", v1.NodeSelectorRequirementWithMinValues{Key: gpuCount, Operator: corev1.NodeSelectorOpIn, Values: []string{"1"}}, []string{"gpu.xlarge/z2/spot", "gpu.xlarge/z1/on-demand"}},
		{"Exists", v1.NodeSelectorRequirementWithMinValues{Key: gpuCount, Operator: corev1.NodeSelectorOpExists}, []string{"gpu.xlarge/z2/spot", "gpu.xlarge/z1/on-demand"}},
		{"Gt", v1.NodeSelectorRequirementWithMinValues{Key: gpuCount, Operator: corev1.NodeSelectorOpGt, Values: []string{"0"}}, []string{"gpu.xlarge/z2/spot", "gpu.xlarge/z1/on-demand"}},
		{"DoesNotExist", v1.NodeSelectorRequirementWithMinValues{Key: gpuCount, Operator: corev1.NodeSelectorOpDoesNotExist}, []string{"cpu.xlarge/z2/spot", "cpu.xlarge/z1/on-demand"}},
		{"on-demand only", v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}, []string{"cpu.xlarge/z1/on-demand", "gpu.xlarge/z1/on-demand"}},
		{"bad bound admits nothing", v1.NodeSelectorRequirementWithMinValues{Key: gpuCount, Operator: corev1.NodeSelectorOpGt, Values: []string{"one"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, l := range LaunchOptions([]v1.NodeSelectorRequirementWithMinValues{pool, team, c.req}, probeCatalog(), nil) {
				got = append(got, l.InstanceType.Name+"/"+l.Offering.Zone+"/"+l.Offering.CapacityType)
			}
			if len(got) != len(c.want) {
				t.Fatalf("LaunchOptions = %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("LaunchOptions = %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestLaunchOptionsSkipsUnavailable(t *testing.T) {
	u := NewUnavailableOfferings(clocktesting.NewFakePassiveClock(time.Unix(0, 0)), time.Hour)
	cat := probeCatalog()
	u.MarkUnavailable(UnavailableOffering{InstanceType: "cpu.xlarge", Zone: "z2", CapacityType: v1.CapacityTypeSpot})
	got := LaunchOptions(nil, cat, u)
	if len(got) != 3 || got[0].InstanceType.Name != "cpu.xlarge" || got[0].Offering.Zone != "z1" {
		t.Fatalf("LaunchOptions = %+v, want cpu.xlarge/z1 first and 3 options", got)
	}
}
