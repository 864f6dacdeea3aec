package cloudprovider

import (
	"sort"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/requirements"
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
// so the choice is deterministic). Which instance types a requirement on a key they do not carry
// admits is decided by requirements.KnownKeys over its; requirements that do not parse admit nothing.
func LaunchOptions(reqs []v1.NodeSelectorRequirementWithMinValues, its []*catalog.InstanceType, unavailable *UnavailableOfferings) []Launchable {
	var out []Launchable
	for _, o := range requirements.AvailableOfferings(reqs, its) {
		l := Launchable{InstanceType: o.InstanceType, Offering: o.Offering}
		if !unavailable.IsUnavailable(l.Key()) {
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
