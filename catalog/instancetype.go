package catalog

import corev1 "k8s.io/api/core/v1"

// InstanceType is one launchable machine shape. Cloud providers return these; the solver,
// the providers and policy all read them as data.
type InstanceType struct {
	Name string
	// Capacity is the machine's total resources (cpu, memory, pods, ephemeral-storage, extended).
	Capacity corev1.ResourceList
	// Overhead is what the kubelet, system daemons and eviction threshold reserve.
	Overhead corev1.ResourceList
	// Labels the node will carry (kubernetes.io/arch, kubernetes.io/os, provider-specific keys).
	// node.kubernetes.io/instance-type, topology.kubernetes.io/zone and karpenter.sh/capacity-type
	// are implied by Name and the chosen Offering.
	Labels    map[string]string
	Offerings []Offering
}

// Offering is where and how an instance type can be bought.
type Offering struct {
	Zone         string
	CapacityType string // karpenter.sh/capacity-type value: spot, on-demand, reserved
	Price        float64
	Available    bool
}

// Allocatable is Capacity less Overhead.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range it.Capacity {
		q = q.DeepCopy()
		if o, ok := it.Overhead[name]; ok {
			q.Sub(o)
		}
		out[name] = q
	}
	return out
}
