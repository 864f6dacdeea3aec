package benchdata

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// CatalogInstanceTypes are the instance types of the uniform and mixed shapes.
// TODO(benchdata): switch to catalog.Default() once solver/catalog lands.
func CatalogInstanceTypes() []*solver.InstanceType {
	return localCatalog()
}

// localCatalog stands in for the default catalog: 1:2, 1:4 and 1:8 GiB per vCPU families, 1–96 vCPU,
// amd64 and arm64 (arm 20% cheaper), three zones, spot at a per-zone discount.
func localCatalog() []*solver.InstanceType {
	families := []struct {
		name      string
		gibPerCPU int
	}{{"c", 2}, {"m", 4}, {"r", 8}}
	arches := []struct {
		name     string
		discount float64
	}{{"amd64", 1}, {"arm64", 0.8}}
	zones := []struct {
		name string
		spot float64
	}{{"test-zone-a", 0.36}, {"test-zone-b", 0.40}, {"test-zone-c", 0.45}}
	var out []*solver.InstanceType
	for _, f := range families {
		for _, a := range arches {
			for _, cpu := range []int{1, 2, 4, 8, 16, 32, 48, 64, 96} {
				mem := cpu * f.gibPerCPU
				od := (0.0316*float64(cpu) + 0.0042*float64(mem)) * a.discount
				var offerings []solver.Offering
				for _, z := range zones {
					offerings = append(offerings,
						solver.Offering{Zone: z.name, CapacityType: v1.CapacityTypeSpot, Price: od * z.spot, Available: true},
						solver.Offering{Zone: z.name, CapacityType: v1.CapacityTypeOnDemand, Price: od, Available: true})
				}
				out = append(out, &solver.InstanceType{
					Name: fmt.Sprintf("%s-%dx-%s-linux", f.name, cpu, a.name),
					Capacity: corev1.ResourceList{
						corev1.ResourceCPU:    *resource.NewQuantity(int64(cpu), resource.DecimalSI),
						corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", mem)),
						corev1.ResourcePods:   resource.MustParse("110"),
					},
					Overhead: corev1.ResourceList{
						corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(60+10*cpu), resource.DecimalSI),
						corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", 255+11*110)),
					},
					Labels:    map[string]string{v1.LabelArch: a.name, v1.LabelOS: string(corev1.Linux)},
					Offerings: offerings,
				})
			}
		}
	}
	return out
}
