package cloudprovider

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// Launchable is one instance type and offering a NodeClaim may launch as.
type Launchable struct {
	InstanceType *catalog.InstanceType
	Offering     catalog.Offering
}

// Key identifies the launchable's offering for the unavailable-offerings cache.
func (l Launchable) Key() UnavailableOffering {
	return UnavailableOffering{InstanceType: l.InstanceType.Name, Zone: l.Offering.Zone, CapacityType: l.Offering.CapacityType}
}

// Labels are the node labels a launch of l carries (instance type labels plus the implied ones).
func (l Launchable) Labels() map[string]string {
	labels := make(map[string]string, len(l.InstanceType.Labels)+3)
	for k, v := range l.InstanceType.Labels {
		labels[k] = v
	}
	labels[v1.LabelInstanceType] = l.InstanceType.Name
	labels[v1.LabelTopologyZone] = l.Offering.Zone
	labels[v1.CapacityTypeLabelKey] = l.Offering.CapacityType
	return labels
}

// LaunchOptions returns the instance type × offering pairs that satisfy the requirements, are
// available and not cached as unavailable, cheapest first (ties broken by name, zone, capacity type
// so the choice is deterministic).
func LaunchOptions(reqs []v1.NodeSelectorRequirementWithMinValues, its []*catalog.InstanceType, unavailable *UnavailableOfferings) []Launchable {
	var out []Launchable
	for _, it := range its {
		for _, o := range it.Offerings {
			l := Launchable{InstanceType: it, Offering: o}
			if !o.Available || unavailable.IsUnavailable(l.Key()) || !RequirementsMatch(reqs, l.Labels()) {
				continue
			}
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Offering.Price != b.Offering.Price {
			return a.Offering.Price < b.Offering.Price
		}
		if a.InstanceType.Name != b.InstanceType.Name {
			return a.InstanceType.Name < b.InstanceType.Name
		}
		if a.Offering.Zone != b.Offering.Zone {
			return a.Offering.Zone < b.Offering.Zone
		}
		return a.Offering.CapacityType < b.Offering.CapacityType
	})
	return out
}

// RequirementsMatch reports whether labels satisfy every requirement. Requirements on keys the
// labels lack (e.g. karpenter.sh/nodepool, custom template labels) only fail for In, Gt/Lt/Gte/Lte
// and Exists when the key is a well-known instance label; other keys are the NodeClaim's own labels.
func RequirementsMatch(reqs []v1.NodeSelectorRequirementWithMinValues, labels map[string]string) bool {
	for _, r := range reqs {
		value, has := labels[r.Key]
		if !has && !isInstanceLabel(r.Key) {
			continue
		}
		if !requirementMatches(r.Operator, r.Values, value, has) {
			return false
		}
	}
	return true
}

// isInstanceLabel reports whether an instance type decides the label (as opposed to the template).
func isInstanceLabel(key string) bool {
	switch key {
	case v1.LabelInstanceType, v1.LabelTopologyZone, v1.CapacityTypeLabelKey, v1.LabelArch, v1.LabelOS:
		return true
	}
	return false
}

func requirementMatches(op corev1.NodeSelectorOperator, values []string, value string, has bool) bool {
	switch op {
	case corev1.NodeSelectorOpIn:
		return has && contains(values, value)
	case corev1.NodeSelectorOpNotIn:
		return !has || !contains(values, value)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if !has || len(values) != 1 {
			return false
		}
		got, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch op {
		case corev1.NodeSelectorOpGt:
			return got > want
		case corev1.NodeSelectorOpLt:
			return got < want
		case v1.NodeSelectorOpGte:
			return got >= want
		default:
			return got <= want
		}
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
