package azure

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"k8s.io/utils/clock"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	"github.com/joist-dev/joist/catalog"
	azuredata "github.com/joist-dev/joist/catalog/azure"
)

// skuCache holds the region's VM sizes from the Resource SKUs API for a TTL.
type skuCache struct {
	client   *armcompute.ResourceSKUsClient
	location string
	clock    clock.PassiveClock
	ttl      time.Duration

	mu      sync.Mutex
	skus    []*azuredata.SKU
	fetched time.Time
}

func (c *skuCache) get(ctx context.Context) ([]*azuredata.SKU, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.skus != nil && c.clock.Since(c.fetched) < c.ttl {
		return c.skus, nil
	}
	var out []*azuredata.SKU
	pager := c.client.NewListPager(&armcompute.ResourceSKUsClientListOptions{Filter: to.Ptr(fmt.Sprintf("location eq '%s'", c.location))})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing resource SKUs in %s: %w", c.location, err)
		}
		for _, s := range page.Value {
			if sku := skuFromAPI(s, c.location); sku != nil {
				out = append(out, sku)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	c.skus, c.fetched = out, c.clock.Now()
	return out, nil
}

// skuFromAPI converts a VM size of the location, dropping the zones its restrictions exclude; nil
// for other resource types and sizes restricted in the whole location.
func skuFromAPI(s *armcompute.ResourceSKU, location string) *azuredata.SKU {
	if s == nil || !strings.EqualFold(str(s.ResourceType), "virtualMachines") || s.Name == nil {
		return nil
	}
	sku := &azuredata.SKU{Name: *s.Name, Family: str(s.Family), Capabilities: map[string]string{}}
	for _, c := range s.Capabilities {
		if c != nil && c.Name != nil {
			sku.Capabilities[*c.Name] = str(c.Value)
		}
	}
	restricted := map[string]bool{}
	for _, r := range s.Restrictions {
		if r == nil || r.Type == nil {
			continue
		}
		switch *r.Type {
		case armcompute.ResourceSKURestrictionsTypeLocation:
			return nil
		case armcompute.ResourceSKURestrictionsTypeZone:
			if r.RestrictionInfo != nil {
				for _, z := range r.RestrictionInfo.Zones {
					restricted[str(z)] = true
				}
			}
		}
	}
	for _, li := range s.LocationInfo {
		if li == nil || !strings.EqualFold(str(li.Location), location) {
			continue
		}
		for _, z := range li.Zones {
			if z != nil && !restricted[*z] {
				sku.Zones = append(sku.Zones, *z)
			}
		}
	}
	sort.Strings(sku.Zones)
	return sku
}

// settings are the catalog settings of the class's nodes.
func (p *CloudProvider) settings(nc *azv1beta1.AKSNodeClass) azuredata.Settings {
	s := azuredata.DefaultSettings()
	s.VMMemoryOverheadPercent = p.opts.VMMemoryOverheadPercent
	s.MaxPods = azuredata.DefaultMaxPods(p.opts.NetworkPlugin, p.opts.NetworkPluginMode)
	if nc.Spec.MaxPods != nil {
		s.MaxPods = *nc.Spec.MaxPods
	}
	s.OSDiskSizeGB = nc.OSDiskSizeGB()
	s.OSSKU = nc.OSSKU()
	s.FIPS = nc.Spec.FIPSMode != nil && *nc.Spec.FIPSMode == azv1beta1.FIPSModeFIPS
	return s
}

// instanceTypes are the sizes the class can launch: supported by AKS, bootable by one of the
// class's images, with an offering per zone (or the regional zone "0" for sizes without zones) and
// capacity type that has a price.
func (p *CloudProvider) instanceTypes(ctx context.Context, nc *azv1beta1.AKSNodeClass) ([]*catalog.InstanceType, error) {
	skus, err := p.skus.get(ctx)
	if err != nil {
		return nil, err
	}
	settings := p.settings(nc)
	var out []*catalog.InstanceType
	for _, sku := range skus {
		if azuredata.Unsupported(sku) != "" || (sku.GPUs() > 0 && nc.GPUDriverInstallation() && azuredata.GPUManufacturer(sku.Name) != "nvidia") {
			continue
		}
		it := azuredata.Build(sku, settings)
		if imageFor(nc, it) == "" {
			continue
		}
		it.Labels["topology.kubernetes.io/region"] = p.opts.Location
		zones := make([]string, 0, len(sku.Zones))
		for _, z := range sku.Zones {
			zones = append(zones, p.opts.Location+"-"+z)
		}
		if len(zones) == 0 {
			zones = []string{"0"}
			it.Labels[azv1beta1.LabelPlacementScope] = "regional"
		}
		for _, z := range zones {
			if price, ok := p.prices.OnDemand(sku.Name); ok {
				it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: "on-demand", Price: price, Available: true})
			}
			if price, ok := p.prices.Spot(sku.Name); ok && sku.Bool("LowPriorityCapable") {
				it.Offerings = append(it.Offerings, catalog.Offering{Zone: z, CapacityType: "spot", Price: price, Available: true})
			}
		}
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	return out, nil
}

// imageFor is the class's image that boots the instance type (architecture, Hyper-V generation), or "".
func imageFor(nc *azv1beta1.AKSNodeClass, it *catalog.InstanceType) string {
	for _, img := range nc.Status.Images {
		ok := true
		for _, r := range img.Requirements {
			v, has := it.Labels[r.Key]
			if !has || !contains(r.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return img.ID
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
