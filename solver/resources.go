package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultMaxPods is assumed when an instance type or node does not state a pods capacity (the
// kubelet's default maxPods).
const defaultMaxPods = 110

// resVec is a resource vector in milli-units, indexed by dims. Entries stay within ±milliCap, so
// the sum of any two never overflows int64.
type resVec []int64

// milliCap bounds every milli-unit amount: 2e18 milli-units is 2P of memory (about 1.8 PiB) or 2e15
// cores, far beyond any one node. A request at milliCap means "more than that" and fits nothing: a
// capacity or limit is held at milliCap-1, so it is never mistaken for room to hold it.
const milliCap = 2_000_000_000_000_000_000

// requestMilli is q in milli-units, saturated at ±milliCap instead of wrapping: Quantity.MilliValue
// wraps negative for anything past 9.2e18 milli-units (8 PiB of memory). The range is read
// approximately first: comparing or converting a quantity like "1e9999999", which the apiserver
// stores as written, costs time that grows with its exponent.
func requestMilli(q resource.Quantity) int64 {
	const limit = milliCap / 1000 // in units, as AsApproximateFloat64 reads q; exact in a float64
	switch f := q.AsApproximateFloat64(); {
	case f >= limit:
		return milliCap
	case f <= -limit:
		return -milliCap
	}
	return clampMilli(q.MilliValue())
}

// milliOf is list[name] in milli-units (saturated, see requestMilli), 0 when absent.
func milliOf(list corev1.ResourceList, name corev1.ResourceName) float64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	return float64(requestMilli(q))
}

// cpuMem is the cpu (millicores) and memory (bytes) of list, saturated as requestMilli does.
func cpuMem(list corev1.ResourceList) [2]float64 {
	return [2]float64{milliOf(list, corev1.ResourceCPU), milliOf(list, corev1.ResourceMemory) / 1000}
}

// capacityMilli is requestMilli for room (capacity, allocatable, limits): held below milliCap.
func capacityMilli(q resource.Quantity) int64 {
	return min(requestMilli(q), milliCap-1)
}

// clampMilli saturates x into ±milliCap.
func clampMilli(x int64) int64 {
	return max(min(x, milliCap), -milliCap)
}

// dims maps resource names to vector indexes. cpu, memory, pods and ephemeral-storage come first,
// extended resources follow in name order.
type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
	pods  int
}

func newDims(extra map[corev1.ResourceName]bool) *dims {
	d := &dims{index: map[corev1.ResourceName]int{}}
	base := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage}
	var rest []corev1.ResourceName
	for n := range extra {
		isBase := false
		for _, b := range base {
			if b == n {
				isBase = true
			}
		}
		if !isBase {
			rest = append(rest, n)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	for _, n := range append(base, rest...) {
		d.index[n] = len(d.names)
		d.names = append(d.names, n)
	}
	d.pods = d.index[corev1.ResourcePods]
	return d
}

func (d *dims) n() int { return len(d.names) }

func (d *dims) zero() resVec { return make(resVec, len(d.names)) }

// vec converts a ResourceList of requests; names outside dims are ignored.
func (d *dims) vec(rl corev1.ResourceList) resVec {
	return d.vecOf(rl, requestMilli)
}

func (d *dims) vecOf(rl corev1.ResourceList, milli func(resource.Quantity) int64) resVec {
	v := d.zero()
	for name, q := range rl {
		if i, ok := d.index[name]; ok {
			v[i] = milli(q)
		}
	}
	return v
}

// capacityVec converts capacity (held below milliCap) with the pods default applied.
func (d *dims) capacityVec(rl corev1.ResourceList) resVec {
	v := d.vecOf(rl, capacityMilli)
	if _, ok := rl[corev1.ResourcePods]; !ok {
		v[d.pods] = defaultMaxPods * 1000
	}
	return v
}

func (d *dims) list(v resVec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 {
			continue
		}
		out[d.names[i]] = quantityFromMilli(d.names[i], x)
	}
	return out
}

func (v resVec) add(o resVec) {
	for i := range v {
		v[i] = clampMilli(v[i] + o[i])
	}
}

func (v resVec) sub(o resVec) {
	for i := range v {
		v[i] = clampMilli(v[i] - o[i])
	}
}

func (v resVec) clone() resVec { return append(resVec(nil), v...) }

// fitsIn reports v+extra <= limit elementwise.
func fitsIn(v, extra, limit resVec) bool {
	for i := range v {
		if v[i]+extra[i] > limit[i] {
			return false
		}
	}
	return true
}

func lessEq(v, limit resVec) bool {
	for i := range v {
		if v[i] > limit[i] {
			return false
		}
	}
	return true
}

// collectResourceNames records every resource a pod spec names.
func collectResourceNames(spec *corev1.PodSpec, into map[corev1.ResourceName]bool) {
	add := func(rl corev1.ResourceList) {
		for n := range rl {
			into[n] = true
		}
	}
	for i := range spec.Containers {
		add(spec.Containers[i].Resources.Requests)
		add(spec.Containers[i].Resources.Limits)
	}
	for i := range spec.InitContainers {
		add(spec.InitContainers[i].Resources.Requests)
		add(spec.InitContainers[i].Resources.Limits)
	}
	add(spec.Overhead)
	if spec.Resources != nil {
		add(spec.Resources.Requests)
	}
}

// containerRequests is a container's requests, with limits standing in for unset requests as API
// defaulting would do.
func (d *dims) containerRequests(c *corev1.Container) resVec {
	v := d.vec(c.Resources.Requests)
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; ok {
			continue
		}
		if i, ok := d.index[name]; ok {
			v[i] = requestMilli(q)
		}
	}
	return v
}

// podRequests applies the Kubernetes effective-request rule: the larger of (app containers plus
// sidecars) and the peak of any init container plus the sidecars started before it; pod-level
// requests override, overhead is added, and the pod itself counts one "pods".
func (d *dims) podRequests(spec *corev1.PodSpec) resVec {
	reqs := d.zero()
	for i := range spec.Containers {
		reqs.add(d.containerRequests(&spec.Containers[i]))
	}
	sidecars := d.zero()
	initPeak := d.zero()
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cr := d.containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			reqs.add(cr)
			sidecars.add(cr)
			cr = sidecars
		} else {
			cr.add(sidecars)
		}
		for j := range initPeak {
			if cr[j] > initPeak[j] {
				initPeak[j] = cr[j]
			}
		}
	}
	for j := range reqs {
		if initPeak[j] > reqs[j] {
			reqs[j] = initPeak[j]
		}
	}
	if spec.Resources != nil {
		for name, q := range spec.Resources.Requests {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				continue
			}
			if i, ok := d.index[name]; ok {
				reqs[i] = requestMilli(q)
			}
		}
	}
	reqs.add(d.vec(spec.Overhead))
	reqs[d.pods] = 1000
	return reqs
}

// describeMilli renders an amount for a message; a saturated one reads "over <milliCap>".
func describeMilli(name corev1.ResourceName, milli int64) string {
	if milli >= milliCap {
		return "over " + resource.NewMilliQuantity(milliCap, resource.DecimalSI).String()
	}
	q := quantityFromMilli(name, milli)
	return q.String()
}

func quantityFromMilli(name corev1.ResourceName, milli int64) resource.Quantity {
	if name == corev1.ResourceCPU || milli%1000 != 0 {
		return *resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	if name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
		return *resource.NewQuantity(milli/1000, resource.BinarySI)
	}
	return *resource.NewQuantity(milli/1000, resource.DecimalSI)
}
