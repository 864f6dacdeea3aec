package ec2

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Settings are the node settings that change an instance type's capacity and overhead: the
// EC2NodeClass's kubelet configuration, root volume and AMI family, and the operator's VM memory
// overhead and reserved ENIs.
type Settings struct {
	// VMMemoryOverheadPercent of memory the hypervisor keeps (default 0.075, as measured by Karpenter).
	VMMemoryOverheadPercent float64
	// ReservedENIs are not used for pods (VPC CNI custom networking).
	ReservedENIs int64
	// ENILimitedPods: max pods from ENI limits (AL2, AL2023, Bottlerocket); otherwise 110.
	ENILimitedPods bool
	// PodsPerCoreEnabled: the AMI family honours kubelet podsPerCore (not Bottlerocket).
	PodsPerCoreEnabled bool
	MaxPods            *int32
	PodsPerCore        *int32
	KubeReserved       map[string]string
	SystemReserved     map[string]string
	EvictionHard       map[string]string
	// RootVolume is the node's ephemeral storage (default 20Gi, the AL2023 root volume).
	RootVolume *resource.Quantity
}

// DefaultSettings are an AL2023 node with no kubelet overrides.
func DefaultSettings() Settings {
	return Settings{VMMemoryOverheadPercent: 0.075, ENILimitedPods: true, PodsPerCoreEnabled: true}
}

var defaultRootVolume = resource.MustParse("20Gi")

// Capacity is what the kubelet reports as node capacity: vCPUs, memory less the VM overhead (and
// the 64 MiB Graviton CMA reservation), the root volume, max pods and extended resources.
func Capacity(info *Info, s Settings) corev1.ResourceList {
	mib := info.MemoryMiB
	if info.Arch == "arm64" {
		mib -= 64
	}
	mib -= int64(math.Ceil(float64(mib) * s.VMMemoryOverheadPercent))
	storage := defaultRootVolume
	if s.RootVolume != nil {
		storage = s.RootVolume.DeepCopy()
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(info.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(mib*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: storage,
		corev1.ResourcePods:             *resource.NewQuantity(MaxPods(info, s), resource.DecimalSI),
	}
	for name, n := range info.Extended {
		out[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return out
}

// MaxPods is kubelet maxPods if set, else ENIs × (IPv4 addresses per ENI − 1) + 2 on the default
// network card (the VPC CNI's formula), else 110; capped by podsPerCore × vCPUs.
func MaxPods(info *Info, s Settings) int64 {
	var count int64
	switch {
	case s.MaxPods != nil:
		count = int64(*s.MaxPods)
	case s.ENILimitedPods && info.ENIs > 0:
		enis := max(info.ENIs-s.ReservedENIs, 0)
		if enis == 0 {
			return 0
		}
		count = enis*(info.IPv4PerENI-1) + 2
	default:
		count = 110
	}
	if s.PodsPerCoreEnabled && s.PodsPerCore != nil && *s.PodsPerCore > 0 {
		count = min(count, int64(*s.PodsPerCore)*info.VCPU)
	}
	return count
}

// Overhead is kube-reserved + system-reserved + the hard eviction thresholds, computed on capacity.
func Overhead(capacity corev1.ResourceList, s Settings) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	kube, err := kubeReserved(capacity, s.KubeReserved)
	if err != nil {
		return nil, err
	}
	system, err := parseReserved("systemReserved", s.SystemReserved)
	if err != nil {
		return nil, err
	}
	eviction, err := evictionThreshold(capacity, s.EvictionHard)
	if err != nil {
		return nil, err
	}
	for _, rl := range []corev1.ResourceList{kube, system, eviction} {
		for name, q := range rl {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out, nil
}

// kubeReserved is the EKS AMIs' formula: memory 11 MiB per pod + 255 MiB; cpu 6% of the first
// core, 1% of the second, 0.5% of the next two and 0.25% of the rest; 1Gi of ephemeral storage.
// Set keys of kubelet kubeReserved replace the computed ones.
func kubeReserved(capacity corev1.ResourceList, set map[string]string) (corev1.ResourceList, error) {
	pods := capacity.Pods().Value()
	cpu := capacity.Cpu().MilliValue()
	var reservedMilli int64
	for _, r := range []struct {
		start, end int64
		fraction   float64
	}{{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, 1 << 31, 0.0025}} {
		if cpu < r.start {
			break
		}
		span := min(cpu, r.end) - r.start
		reservedMilli += int64(float64(span) * r.fraction)
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(reservedMilli, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	overrides, err := parseReserved("kubeReserved", set)
	if err != nil {
		return nil, err
	}
	for name, q := range overrides {
		out[name] = q
	}
	return out, nil
}

func parseReserved(field string, set map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range set {
		if k == "pid" {
			continue // not a schedulable resource
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("kubelet %s[%s]=%q is not a quantity: %w", field, k, v, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// evictionThreshold is memory.available 100Mi and nodefs.available 10% unless evictionHard sets
// them (a quantity or a percentage of capacity). Soft thresholds do not reduce allocatable.
func evictionThreshold(capacity corev1.ResourceList, evictionHard map[string]string) (corev1.ResourceList, error) {
	storage := capacity.StorageEphemeral().Value()
	out := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(math.Ceil(float64(storage)/100*10)), resource.BinarySI),
	}
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		v, ok := evictionHard[signal]
		if !ok {
			continue
		}
		q, err := evictionSignal(capacity[name], v)
		if err != nil {
			return nil, fmt.Errorf("kubelet evictionHard[%s]: %w", signal, err)
		}
		out[name] = q
	}
	return out, nil
}

func evictionSignal(capacity resource.Quantity, v string) (resource.Quantity, error) {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p < 0 || p > 100 {
			return resource.Quantity{}, fmt.Errorf("%q is not a percentage between 0 and 100", v)
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity.Value())*p/100)), resource.BinarySI), nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("%q is neither a quantity nor a percentage: %w", v, err)
	}
	return q, nil
}
