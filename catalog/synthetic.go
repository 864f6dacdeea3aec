package catalog

import (
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
)

// Labels the default catalog sets on its instance types, for NodePool requirements such as
// `joist.dev/instance-family In [c, m]` or `joist.dev/instance-cpu Gt 3`.
const (
	LabelInstanceFamily   = "joist.dev/instance-family"
	LabelInstanceSize     = "joist.dev/instance-size"
	LabelInstanceCPU      = "joist.dev/instance-cpu"
	LabelInstanceMemory   = "joist.dev/instance-memory" // MiB
	LabelInstanceGPUCount = "joist.dev/instance-gpu-count"
	LabelInstanceGPUName  = "joist.dev/instance-gpu-name"

	// ResourceGPU is the extended resource the GPU family offers.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

	// Region is the region label value of the default catalog.
	Region = "test-region"
)

// Zones of the default catalog, and the spot discount off the on-demand price in each.
var (
	Zones        = []string{"test-zone-a", "test-zone-b", "test-zone-c"}
	spotDiscount = map[string]float64{"test-zone-a": 0.64, "test-zone-b": 0.60, "test-zone-c": 0.55}
)

// Synthetic pricing, loosely modelled on public x86 list prices: a vCPU-hour and a GiB-hour of
// memory; arm64 costs armDiscount less; a GPU-hour on top for the GPU family.
const (
	pricePerVCPU    = 0.031
	pricePerGiB     = 0.0042
	pricePerGPU     = 0.90
	armFactor       = 0.80
	ephemeralGiB    = 100
	ephemeralKubeMi = 1024
	evictionMemMi   = 100
)

// families are the general-purpose shapes: GiB of memory per vCPU.
var families = []struct {
	name      string
	gibPerCPU int64
}{{"c", 2}, {"m", 4}, {"r", 8}}

var (
	sizes = []int64{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96}
	archs = []string{"amd64", "arm64"}
	// gpuShapes: GPUs, vCPUs (1:4 GiB per vCPU), amd64 only.
	gpuShapes = []struct{ gpus, cpus int64 }{{1, 8}, {4, 48}, {8, 96}}
)

// Synthetic computes the default catalog: families c, m and r (2, 4 and 8 GiB per vCPU) in sizes
// 1–96 vCPU for amd64 and arm64, and a GPU family g with 1, 4 and 8 nvidia.com/gpu; each type offered
// spot and on-demand in three zones. default.yaml is Synthetic marshalled (`go generate`).
func Synthetic() []*InstanceType {
	var out []*InstanceType
	for _, f := range families {
		for _, arch := range archs {
			for _, cpus := range sizes {
				out = append(out, synthetic(f.name, arch, cpus, cpus*f.gibPerCPU, 0))
			}
		}
	}
	for _, g := range gpuShapes {
		out = append(out, synthetic("g", "amd64", g.cpus, g.cpus*4, g.gpus))
	}
	return out
}

func synthetic(family, arch string, cpus, memGiB, gpus int64) *InstanceType {
	size := fmt.Sprintf("%dx", cpus)
	name := fmt.Sprintf("%s-%s-%s-linux", family, size, arch)
	if gpus > 0 {
		name = fmt.Sprintf("%s%d-%s-%s-linux", family, gpus, size, arch)
	}
	pods := MaxPods(cpus)
	it := &InstanceType{
		Name: name,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(cpus, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(memGiB<<30, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity(ephemeralGiB<<30, resource.BinarySI),
		},
		Overhead: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewMilliQuantity(ReservedMilliCPU(cpus), resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(ReservedMemoryMi(pods)<<20, resource.BinarySI),
			corev1.ResourceEphemeralStorage: *resource.NewQuantity((ephemeralKubeMi+ephemeralGiB*1024/10)<<20, resource.BinarySI),
		},
		Labels: map[string]string{
			v1.LabelArch:           arch,
			v1.LabelOS:             "linux",
			v1.LabelTopologyRegion: Region,
			LabelInstanceFamily:    family,
			LabelInstanceSize:      size,
			LabelInstanceCPU:       strconv.FormatInt(cpus, 10),
			LabelInstanceMemory:    strconv.FormatInt(memGiB*1024, 10),
		},
	}
	if gpus > 0 {
		it.Capacity[ResourceGPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
		it.Labels[LabelInstanceGPUCount] = strconv.FormatInt(gpus, 10)
		it.Labels[LabelInstanceGPUName] = "synthetic-t4"
	}
	onDemand := float64(cpus)*pricePerVCPU + float64(memGiB)*pricePerGiB + float64(gpus)*pricePerGPU
	if arch == "arm64" {
		onDemand *= armFactor
	}
	for _, zone := range Zones {
		it.Offerings = append(it.Offerings,
			Offering{Zone: zone, CapacityType: v1.CapacityTypeSpot, Price: round5(onDemand * (1 - spotDiscount[zone])), Available: true},
			Offering{Zone: zone, CapacityType: v1.CapacityTypeOnDemand, Price: round5(onDemand), Available: true},
		)
	}
	return it
}

// MaxPods is the default catalog's pod capacity for a size: 16 per vCPU, at most 250.
func MaxPods(cpus int64) int64 {
	return min(16*cpus, 250)
}

// ReservedMilliCPU is the kubelet CPU reserve in the style of the common cloud formula: 6% of the
// first core, 1% of the second, 0.5% of the third and fourth, 0.25% of every core above four.
func ReservedMilliCPU(cpus int64) int64 {
	steps := []struct{ upTo, permille10 int64 }{{1, 600}, {2, 100}, {4, 50}, {math.MaxInt64, 25}} // per-10k of a core
	var reserved, prev int64
	for _, s := range steps {
		if cpus <= prev {
			break
		}
		cores := min(cpus, s.upTo) - prev
		reserved += cores * 1000 * s.permille10 / 10000
		prev = s.upTo
	}
	return reserved
}

// ReservedMemoryMi is the kubelet memory reserve in MiB: 255 MiB + 11 MiB per schedulable pod, plus
// a 100 MiB hard eviction threshold.
func ReservedMemoryMi(maxPods int64) int64 {
	return 255 + 11*maxPods + evictionMemMi
}

func round5(f float64) float64 {
	return math.Round(f*1e5) / 1e5
}
