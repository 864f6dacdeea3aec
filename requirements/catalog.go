package requirements

import (
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// KnownKeys are the label keys instance types decide: node.kubernetes.io/instance-type and every
// label key that some instance type of the catalog defines. They carry the one rule for a key an
// instance type does not define:
//   - if some instance type of the catalog defines the key, a type without it launches nodes
//     without the label, so a requirement that needs the label (In, Exists, Gt, ...) excludes it;
//   - if no instance type defines the key, the key is the NodePool's own (a custom label such as
//     team=a, or a provider key this catalog does not model): the NodeClaim's requirements decide
//     the node's label and the requirement never excludes an instance type.
//
// Zone and capacity type are decided by an offering, karpenter.sh/nodepool by the pool.
type KnownKeys map[string]bool

// Known collects the known keys of the catalogs given (each a list of instance types).
func Known(catalogs ...[]*catalog.InstanceType) KnownKeys {
	keys := KnownKeys{v1.LabelInstanceType: true}
	for _, c := range catalogs {
		for _, it := range c {
			if it == nil {
				continue
			}
			for k := range it.Labels {
				keys[k] = true
			}
		}
	}
	return keys
}

// TypeLabel resolves what a node of instance type it carries for key. decided is false where the
// instance type does not decide the label: zone and capacity type (its offering does),
// karpenter.sh/nodepool (the pool does) and keys no instance type of the catalog defines (the
// NodePool's requirements do).
func (k KnownKeys) TypeLabel(it *catalog.InstanceType, key string) (value string, present, decided bool) {
	switch key {
	case v1.LabelInstanceType:
		return it.Name, true, true
	case v1.LabelTopologyZone, v1.CapacityTypeLabelKey, v1.NodePoolLabelKey:
		return "", false, false
	case MetadataNameKey, v1.LabelHostname:
		return "", false, true // a new node's name is unknown
	}
	if v, ok := it.Labels[key]; ok {
		return v, true, true
	}
	if k[key] {
		return "", false, true
	}
	return "", false, false
}

// AdmitsType reports whether the instance-type-decided labels of it satisfy s. Keys it does not
// decide (see TypeLabel) are left to the caller.
func (s Set) AdmitsType(it *catalog.InstanceType, known KnownKeys) bool {
	for i := range s {
		v, present, decided := known.TypeLabel(it, s[i].Key)
		if decided && !s[i].Matches(v, present) {
			return false
		}
	}
	return true
}

// Offerings returns the offerings of it that a node satisfying s can be bought through (available
// or not; the caller filters availability); none means s does not admit the instance type. A
// requirement on karpenter.sh/nodepool or on a key no instance type defines never excludes a type.
func (s Set) Offerings(it *catalog.InstanceType, known KnownKeys) []catalog.Offering {
	if !s.AdmitsType(it, known) {
		return nil
	}
	zones, hasZones := s.Get(v1.LabelTopologyZone)
	cts, hasCTs := s.Get(v1.CapacityTypeLabelKey)
	var out []catalog.Offering
	for _, o := range it.Offerings {
		if (!hasZones || zones.Has(o.Zone)) && (!hasCTs || cts.Has(o.CapacityType)) {
			out = append(out, o)
		}
	}
	return out
}

// Offered is one instance type and one of its offerings.
type Offered struct {
	InstanceType *catalog.InstanceType
	Offering     catalog.Offering
}

// AvailableOfferings are the available offerings of its that reqs admit, in catalog order. Which
// types a requirement on a key they do not carry admits is decided by Known(its); requirements that
// do not parse admit nothing.
func AvailableOfferings(reqs []v1.NodeSelectorRequirementWithMinValues, its []*catalog.InstanceType) []Offered {
	set, err := FromAPI(reqs)
	if err != nil {
		return nil
	}
	known := Known(its)
	var out []Offered
	for _, it := range its {
		if it == nil {
			continue
		}
		for _, o := range set.Offerings(it, known) {
			if o.Available {
				out = append(out, Offered{InstanceType: it, Offering: o})
			}
		}
	}
	return out
}
