package catalog

import "testing"

func TestOfferingPrice(t *testing.T) {
	its := Default()
	it := its[0]
	o := it.Offerings[0]
	if got, ok := OfferingPrice(its, it.Name, o.Zone, o.CapacityType); !ok || got != o.Price {
		t.Errorf("OfferingPrice(%s, %s, %s) = %v, %v; want %v, true", it.Name, o.Zone, o.CapacityType, got, ok, o.Price)
	}
	if _, ok := OfferingPrice(its, it.Name, "no-such-zone", o.CapacityType); ok {
		t.Error("found an offering in a zone the catalog lacks")
	}
	if _, ok := OfferingPrice(its, "no-such-type", o.Zone, o.CapacityType); ok {
		t.Error("found an instance type the catalog lacks")
	}
}
