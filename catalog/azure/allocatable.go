package azure

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Max pods per node AKS defaults to by network plugin when the AKSNodeClass sets none.
const (
	MaxPodsOverlay    = 250 // Azure CNI Overlay, Cilium, and no CNI plugin ("none")
	MaxPodsNodeSubnet = 30  // Azure CNI with pod IPs from the node subnet
	MaxPodsKubernetes = 110 // kubenet and everything else
)

// DefaultMaxPods is AKS's default for the cluster's network plugin (azure, kubenet, none) and mode
// (overlay or empty).
func DefaultMaxPods(networkPlugin, networkPluginMode string) int32 {
	switch {
	case networkPlugin == "none":
		return MaxPodsOverlay
	case networkPlugin == "azure" && networkPluginMode == "overlay":
		return MaxPodsOverlay
	case networkPlugin == "azure" && networkPluginMode == "":
		return MaxPodsNodeSubnet
	}
	return MaxPodsKubernetes
}

// Settings are the node settings that change a SKU's capacity and labels.
type Settings struct {
	// VMMemoryOverheadPercent of memory the hypervisor keeps (default 0.075, the AKS provider's).
	VMMemoryOverheadPercent float64
	// MaxPods per node (AKSNodeClass maxPods, else DefaultMaxPods).
	MaxPods int32
	// OSDiskSizeGB is the node's ephemeral storage in GB (AKSNodeClass osDiskSizeGB, default 128).
	OSDiskSizeGB int32
	// OSSKU is the kubernetes.azure.com/os-sku label: Ubuntu or AzureLinux.
	OSSKU string
	// FIPS nodes carry kubernetes.azure.com/fips_enabled=true.
	FIPS bool
}

// DefaultSettings are an Ubuntu node with a 128 GB OS disk on Azure CNI Overlay.
func DefaultSettings() Settings {
	return Settings{VMMemoryOverheadPercent: 0.075, MaxPods: MaxPodsOverlay, OSDiskSizeGB: 128, OSSKU: "Ubuntu"}
}

// EvictionMemoryAvailable is AKS's hard eviction threshold, memory.available<750Mi.
var EvictionMemoryAvailable = resource.MustParse("750Mi")

// Capacity is what the kubelet reports: vCPUs; memory as whole GiB less the VM overhead; the OS
// disk in GB; max pods; GPUs as nvidia.com/gpu or amd.com/gpu.
func Capacity(s *SKU, st Settings) corev1.ResourceList {
	memory := *resource.NewQuantity(int64(s.MemoryGiB())*1024*1024*1024, resource.BinarySI)
	memory.Sub(*resource.NewQuantity(int64(math.Ceil(float64(memory.Value())*st.VMMemoryOverheadPercent)), resource.DecimalSI))
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(s.VCPU(), resource.DecimalSI),
		corev1.ResourceMemory:           memory,
		corev1.ResourceEphemeralStorage: *resource.NewScaledQuantity(int64(st.OSDiskSizeGB), resource.Giga),
		corev1.ResourcePods:             *resource.NewQuantity(int64(st.MaxPods), resource.DecimalSI),
	}
	if gpus := s.GPUs(); gpus > 0 {
		switch GPUManufacturer(s.Name) {
		case "nvidia":
			out["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		case "amd":
			out["amd.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		}
	}
	return out
}

// bracket is one band of a regressive reservation: rate applies to the amount up to upper.
type bracket struct{ upper, rate float64 }

// AKS reserves memory for the kubelet at 25% of the first 4 GiB, 20% of the next 4, 10% of the
// next 8, 6% of the next 112 and 2% above 128 GiB; and CPU at 6% of the first core, 4% of the
// second, 2% of the third and fourth and 1% of every core beyond.
var (
	memoryBrackets = []bracket{{4, .25}, {8, .20}, {16, .10}, {128, .06}, {math.MaxFloat64, .02}}
	cpuBrackets    = []bracket{{1, .06}, {2, .04}, {4, .02}, {math.MaxFloat64, .01}}
)

func reserve(brackets []bracket, amount float64) float64 {
	var total, lower float64
	for _, b := range brackets {
		if amount <= lower {
			break
		}
		total += (min(b.upper, amount) - lower) * b.rate
		lower = b.upper
	}
	return total
}

// KubeReserved is AKS's kube-reserved for a VM with vcpus and memGiB (the SKU's MemoryGB).
func KubeReserved(vcpus int64, memGiB float64) corev1.ResourceList {
	memMi := int64(1024 * reserve(memoryBrackets, memGiB))
	cpuMilli := int64(1000 * reserve(cpuBrackets, float64(vcpus)))
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memMi*1024*1024, resource.BinarySI),
	}
}

// Overhead is kube-reserved plus the 750Mi memory eviction threshold; AKS reserves no
// system-reserved and no ephemeral storage.
func Overhead(s *SKU) corev1.ResourceList {
	out := KubeReserved(s.VCPU(), s.MemoryGiB())
	mem := out[corev1.ResourceMemory]
	mem.Add(EvictionMemoryAvailable)
	out[corev1.ResourceMemory] = mem
	return out
}
