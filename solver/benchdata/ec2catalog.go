package benchdata

import (
	"fmt"
	"hash/fnv"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// This file generates a *model* of the EC2 catalog from public facts, self-contained so the solver
// benchmarks do not depend on the embedded EC2 data (catalog/ec2) that is being built concurrently;
// the two should be unified once that lands. What is modelled:
//
//   - families c/m/r with 2/4/8 GiB per vCPU, in amd64 (6th and 7th generation Intel) and arm64
//     (Graviton 2 and 3) flavours; arm64 ~20% cheaper than amd64 of the same shape, as on the
//     us-east-1 list (c6g.large $0.068 vs c6i.large $0.085);
//   - sizes from 1 (arm64 medium) or 2 vCPU to 64 (arm64) or 96 vCPU (amd64), priced linearly in
//     vCPU within a family at the family's us-east-1 on-demand rate per vCPU;
//   - burstable t3 (amd64) and t4g (arm64) small..2xlarge at their list prices (linear in memory);
//   - g5 GPU types (1 or 4 NVIDIA A10G) at their list prices;
//   - max pods per size from the VPC CNI formula ENIs × (IPv4 per ENI − 1) + 2 with the Nitro ENI
//     limits of each size (8 for medium up to 737 for 16xlarge and 24xlarge);
//   - allocatable as Karpenter's AWS provider computes it: memory less 7.5% VM overhead (and the
//     64 MiB Graviton CMA reservation), kube-reserved cpu 6% of the first core, 1% of the second,
//     0.5% of cores 3–4, 0.25% of the rest, kube-reserved memory 11 MiB × max pods + 255 MiB,
//     and the 100 MiB memory.available eviction threshold;
//   - three zones; on-demand at the list price in each; spot at a fraction of on-demand that
//     depends on the family and the zone: 0.30 + 0.15 × h, h = fmix32(FNV-1a("<family>/<zone>")) / 2³²,
//     so spot ranges over 0.30–0.45× and the cheapest zone differs by family.

// EC2Zones are the model catalog's zones.
var EC2Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// Well-known label keys of Karpenter's AWS provider that the model catalog sets.
const (
	LabelInstanceFamily   = "karpenter.k8s.aws/instance-family"
	LabelInstanceCategory = "karpenter.k8s.aws/instance-category"
	LabelInstanceCPU      = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceGPUCount = "karpenter.k8s.aws/instance-gpu-count"
	ResourceGPU           = corev1.ResourceName("nvidia.com/gpu")
)

// ec2Family is one modelled instance family.
type ec2Family struct {
	name, category, arch string
	gibPerVCPU           float64
	odPerVCPU            float64 // on-demand $/h per vCPU
	vcpus                []int
}

var (
	amd64Sizes = []int{2, 4, 8, 16, 32, 48, 64, 96}
	arm64Sizes = []int{1, 2, 4, 8, 16, 32, 48, 64}
)

// ec2Families: per-vCPU rates are the us-east-1 on-demand list price of the family's large size ÷ 2.
var ec2Families = []ec2Family{
	{"c6i", "c", "amd64", 2, 0.0425, amd64Sizes},
	{"m6i", "m", "amd64", 4, 0.048, amd64Sizes},
	{"r6i", "r", "amd64", 8, 0.063, amd64Sizes},
	{"c7i", "c", "amd64", 2, 0.044625, amd64Sizes},
	{"m7i", "m", "amd64", 4, 0.0504, amd64Sizes},
	{"r7i", "r", "amd64", 8, 0.06615, amd64Sizes},
	{"c6g", "c", "arm64", 2, 0.034, arm64Sizes},
	{"m6g", "m", "arm64", 4, 0.0385, arm64Sizes},
	{"r6g", "r", "arm64", 8, 0.0504, arm64Sizes},
	{"c7g", "c", "arm64", 2, 0.03625, arm64Sizes},
	{"m7g", "m", "arm64", 4, 0.0408, arm64Sizes},
	{"r7g", "r", "arm64", 8, 0.05355, arm64Sizes},
}

// ec2Fixed is a type priced from the list rather than linearly (burstable and GPU types).
type ec2Fixed struct {
	family, category, arch, size string
	vcpus                        int
	memGiB                       float64
	gpus                         int
	price                        float64
	maxPods                      int
}

var ec2FixedTypes = []ec2Fixed{
	{"t3", "t", "amd64", "small", 2, 2, 0, 0.0208, 11},
	{"t3", "t", "amd64", "medium", 2, 4, 0, 0.0416, 17},
	{"t3", "t", "amd64", "large", 2, 8, 0, 0.0832, 35},
	{"t3", "t", "amd64", "xlarge", 4, 16, 0, 0.1664, 58},
	{"t3", "t", "amd64", "2xlarge", 8, 32, 0, 0.3328, 58},
	{"t4g", "t", "arm64", "small", 2, 2, 0, 0.0168, 11},
	{"t4g", "t", "arm64", "medium", 2, 4, 0, 0.0336, 17},
	{"t4g", "t", "arm64", "large", 2, 8, 0, 0.0672, 35},
	{"t4g", "t", "arm64", "xlarge", 4, 16, 0, 0.1344, 58},
	{"t4g", "t", "arm64", "2xlarge", 8, 32, 0, 0.2688, 58},
	{"g5", "g", "amd64", "xlarge", 4, 16, 1, 1.006, 58},
	{"g5", "g", "amd64", "2xlarge", 8, 32, 1, 1.212, 58},
	{"g5", "g", "amd64", "4xlarge", 16, 64, 1, 1.624, 234},
	{"g5", "g", "amd64", "8xlarge", 32, 128, 1, 2.448, 234},
	{"g5", "g", "amd64", "12xlarge", 48, 192, 4, 5.672, 737},
	{"g5", "g", "amd64", "24xlarge", 96, 384, 4, 8.144, 737},
}

// sizeName is EC2's size suffix for a vCPU count (Nitro c/m/r families).
func sizeName(vcpus int) string {
	switch vcpus {
	case 1:
		return "medium"
	case 2:
		return "large"
	case 4:
		return "xlarge"
	}
	return fmt.Sprintf("%dxlarge", vcpus/4)
}

// eniMaxPods is the VPC CNI max pods of a Nitro c/m/r size: ENIs × (IPv4 per ENI − 1) + 2.
func eniMaxPods(vcpus int) int {
	switch {
	case vcpus <= 1:
		return 2*(4-1) + 2 // 8
	case vcpus == 2:
		return 3*(10-1) + 2 // 29
	case vcpus <= 8:
		return 4*(15-1) + 2 // 58
	case vcpus <= 48:
		return 8*(30-1) + 2 // 234
	default:
		return 15*(50-1) + 2 // 737
	}
}

// SpotFactor is the model's spot price as a fraction of on-demand for a family in a zone:
// 0.30 + 0.15 × fmix32(FNV-1a("<family>/<zone>")) / 2³².
func SpotFactor(family, zone string) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(family + "/" + zone))
	return 0.30 + 0.15*float64(fmix32(h.Sum32()))/float64(1<<32)
}

// fmix32 is MurmurHash3's finaliser: FNV-1a of strings that differ only in the last byte differ
// only in their low bits, and the finaliser spreads that over the whole word.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// kubeReservedCPU is Karpenter's AWS kube-reserved cpu in millicores for a vCPU count.
func kubeReservedCPU(vcpus int) int64 {
	milli := float64(vcpus * 1000)
	total := 0.0
	for _, r := range []struct{ start, end, pct float64 }{
		{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, math.MaxInt32, 0.0025},
	} {
		if milli >= r.start {
			total += math.Floor((math.Min(milli, r.end) - r.start) * r.pct)
		}
	}
	return int64(total)
}

// ec2Type builds one modelled instance type.
func ec2Type(family, category, arch, size string, vcpus int, memGiB float64, gpus int, odPrice float64, maxPods int) *catalog.InstanceType {
	memMiB := int64(memGiB * 1024)
	if arch == "arm64" {
		memMiB -= 64 // Graviton CMA reservation
	}
	memMiB -= int64(math.Ceil(float64(memMiB) * 0.075)) // VM overhead
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(vcpus), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memMiB<<20, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
	if gpus > 0 {
		capacity[ResourceGPU] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	overhead := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(kubeReservedCPU(vcpus), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity((int64(11*maxPods+255)+100)<<20, resource.BinarySI),
	}
	name := family + "." + size
	it := &catalog.InstanceType{
		Name:     name,
		Capacity: capacity,
		Overhead: overhead,
		Labels: map[string]string{
			v1.LabelArch:          arch,
			v1.LabelOS:            string(corev1.Linux),
			LabelInstanceFamily:   family,
			LabelInstanceCategory: category,
			LabelInstanceCPU:      fmt.Sprint(vcpus),
			LabelInstanceGPUCount: fmt.Sprint(gpus),
		},
	}
	for _, z := range EC2Zones {
		it.Offerings = append(it.Offerings,
			catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: odPrice, Available: true},
			catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: round4(odPrice * SpotFactor(family, z)), Available: true})
	}
	return it
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// EC2InstanceTypes returns the model EC2 catalog (fresh copies on every call): 12 c/m/r families,
// t3/t4g and g5, each type offered on-demand and spot in the three EC2Zones.
func EC2InstanceTypes() []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for _, f := range ec2Families {
		for _, v := range f.vcpus {
			out = append(out, ec2Type(f.name, f.category, f.arch, sizeName(v), v, f.gibPerVCPU*float64(v), 0,
				round4(f.odPerVCPU*float64(v)), eniMaxPods(v)))
		}
	}
	for _, f := range ec2FixedTypes {
		out = append(out, ec2Type(f.family, f.category, f.arch, f.size, f.vcpus, f.memGiB, f.gpus, f.price, f.maxPods))
	}
	return out
}
