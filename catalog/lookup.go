package catalog

// OfferingPrice returns the $/hour of an instance type's offering in a zone and capacity type, and
// whether the catalog has that offering.
func OfferingPrice(its []*InstanceType, instanceType, zone, capacityType string) (float64, bool) {
	for _, it := range its {
		if it.Name != instanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o.Price, true
			}
		}
	}
	return 0, false
}
