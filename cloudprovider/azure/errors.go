package azure

import (
	"fmt"
	"strings"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// capacityError turns ARM's capacity and quota errors into an InsufficientCapacityError naming the
// offerings to skip, as the AKS provider treats them; nil for any other error.
//
//	SkuNotAvailable                    the size in the zone and capacity type
//	ZonalAllocationFailed              the size in the zone, both capacity types
//	AllocationFailed                   the size in every zone, both capacity types
//	OverconstrainedAllocationRequest   the size in the zone and capacity type
//	OperationNotAllowed (LowPriorityCores quota)  every spot offering
//	OperationNotAllowed (family cores quota)      every size of the quota family, that capacity type
func (p *CloudProvider) capacityError(err error, code string, l cloudprovider.Launchable, its []*catalog.InstanceType) error {
	var marks []cloudprovider.UnavailableOffering
	it := l.InstanceType
	mark := func(filter func(it *catalog.InstanceType, o catalog.Offering) bool) {
		for _, candidate := range its {
			for _, o := range candidate.Offerings {
				if filter(candidate, o) {
					marks = append(marks, cloudprovider.UnavailableOffering{InstanceType: candidate.Name, Zone: o.Zone, CapacityType: o.CapacityType})
				}
			}
		}
	}
	msg := err.Error()
	switch {
	case code == "SkuNotAvailable" || code == "OverconstrainedAllocationRequest" || code == "OverconstrainedZonalAllocationRequest":
		marks = append(marks, l.Key())
	case code == "ZonalAllocationFailed":
		mark(func(c *catalog.InstanceType, o catalog.Offering) bool {
			return c.Name == it.Name && o.Zone == l.Offering.Zone
		})
	case code == "AllocationFailed":
		mark(func(c *catalog.InstanceType, _ catalog.Offering) bool { return c.Name == it.Name })
	case code == "OperationNotAllowed" && strings.Contains(msg, "LowPriorityCores"):
		mark(func(_ *catalog.InstanceType, o catalog.Offering) bool { return o.CapacityType == v1.CapacityTypeSpot })
	case code == "OperationNotAllowed" && strings.Contains(strings.ToLower(msg), "quota"):
		family := p.family(it.Name)
		mark(func(c *catalog.InstanceType, o catalog.Offering) bool {
			return o.CapacityType == l.Offering.CapacityType && (c.Name == it.Name || (family != "" && p.family(c.Name) == family))
		})
	default:
		return nil
	}
	for _, m := range marks {
		p.unavailable.MarkUnavailable(m)
	}
	return &cloudprovider.InsufficientCapacityError{Err: fmt.Errorf("%s for %s in %s (%s): %w", code, it.Name, l.Offering.Zone, l.Offering.CapacityType, err), Offerings: marks}
}

// family is a size's quota family from the cached Resource SKUs.
func (p *CloudProvider) family(size string) string {
	p.skus.mu.Lock()
	defer p.skus.mu.Unlock()
	for _, s := range p.skus.skus {
		if s.Name == size {
			return s.Family
		}
	}
	return ""
}
