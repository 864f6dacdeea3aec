package aws

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	ec2data "github.com/joist-dev/joist/catalog/ec2"
	"github.com/joist-dev/joist/cloudprovider"
)

var staleServed = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "joist_aws_cache_stale_served_total",
	Help: "Answers served from stale cached AWS data because a refresh failed (throttling, outage), by cache.",
}, []string{"cache"})

func init() { metrics.Registry.MustRegister(staleServed) }

// instanceTypeCache holds what DescribeInstanceTypes and DescribeInstanceTypeOfferings said, for a
// TTL. Concurrent refreshes share one set of calls, and no lock is held while they run; when a
// refresh fails (EC2 throttling the account, say) the previous answer keeps being served — counted
// in joist_aws_cache_stale_served_total and, once per failure streak, returned as stale for the
// caller to report — and is retried after a third of the TTL, so provisioning never stops for a
// describe error once the cache is warm.
type instanceTypeCache struct {
	ec2   *ec2.Client
	clock clock.PassiveClock
	ttl   time.Duration

	refresh singleflight.Group
	mu      sync.RWMutex
	infos   []*ec2data.Info
	zones   map[string][]string // type → zones offered
	fetched time.Time
	retryAt time.Time
	failing bool
}

type instanceTypeData struct {
	infos []*ec2data.Info
	zones map[string][]string
}

// get returns the instance types and zones, refreshing them once the TTL has passed. stale is the
// refresh error when the answer is the previous one (first time of a failure streak only).
func (c *instanceTypeCache) get(ctx context.Context) (infos []*ec2data.Info, zones map[string][]string, stale, err error) {
	c.mu.RLock()
	infos, zones, fetched, retryAt := c.infos, c.zones, c.fetched, c.retryAt
	c.mu.RUnlock()
	if infos != nil && (c.clock.Since(fetched) < c.ttl || c.clock.Now().Before(retryAt)) {
		return infos, zones, nil, nil
	}
	v, err, _ := c.refresh.Do("all", func() (any, error) {
		infos, err := c.describeInstanceTypes(ctx)
		var zones map[string][]string
		if err == nil {
			zones, err = c.describeOfferings(ctx)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.retryAt = c.clock.Now().Add(c.ttl / 3)
			return nil, err
		}
		c.infos, c.zones, c.fetched, c.failing = infos, zones, c.clock.Now(), false
		return instanceTypeData{infos, zones}, nil
	})
	if err != nil {
		if infos == nil {
			return nil, nil, nil, err
		}
		staleServed.WithLabelValues("instance-types").Inc()
		c.mu.Lock()
		first := !c.failing
		c.failing = true
		c.mu.Unlock()
		if first {
			stale = fmt.Errorf("%w; serving the instance types read %s ago", err, c.clock.Since(fetched).Round(time.Second))
		}
		return infos, zones, stale, nil
	}
	d := v.(instanceTypeData)
	return d.infos, d.zones, nil, nil
}

func (c *instanceTypeCache) describeInstanceTypes(ctx context.Context) ([]*ec2data.Info, error) {
	var out []*ec2data.Info
	pages := ec2.NewDescribeInstanceTypesPaginator(c.ec2, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}}},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types: %w", err)
		}
		for i := range page.InstanceTypes {
			if info := infoFromAPI(&page.InstanceTypes[i]); info != nil {
				out = append(out, info)
			}
		}
	}
	return out, nil
}

func (c *instanceTypeCache) describeOfferings(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(c.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			it := string(o.InstanceType)
			out[it] = append(out[it], aws.ToString(o.Location))
		}
	}
	return out, nil
}

// infoFromAPI converts DescribeInstanceTypes output. Labels the API does not give (bandwidths, CPU
// manufacturer…) come from the embedded data when it knows the type.
func infoFromAPI(it *ec2types.InstanceTypeInfo) *ec2data.Info {
	if it.VCpuInfo == nil || it.MemoryInfo == nil || it.ProcessorInfo == nil || it.NetworkInfo == nil {
		return nil
	}
	name := string(it.InstanceType)
	info := &ec2data.Info{
		Name: name, VCPU: int64(aws.ToInt32(it.VCpuInfo.DefaultVCpus)), MemoryMiB: aws.ToInt64(it.MemoryInfo.SizeInMiB),
		Labels: map[string]string{}, IPv4PerENI: int64(aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface)),
		ENIs: int64(aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces)),
	}
	for _, a := range it.ProcessorInfo.SupportedArchitectures {
		switch a {
		case ec2types.ArchitectureTypeX8664:
			info.Arch = "amd64"
		case ec2types.ArchitectureTypeArm64:
			info.Arch = "arm64"
		}
	}
	if info.Arch == "" {
		return nil // i386, mac: not nodes
	}
	if idx := it.NetworkInfo.DefaultNetworkCardIndex; idx != nil {
		for _, card := range it.NetworkInfo.NetworkCards {
			if aws.ToInt32(card.NetworkCardIndex) == *idx && card.MaximumNetworkInterfaces != nil {
				info.ENIs = int64(*card.MaximumNetworkInterfaces)
			}
		}
	}
	if known := ec2data.Lookup(name); known != nil {
		for k, v := range known.Labels {
			info.Labels[k] = v
		}
		for k, v := range known.Extended {
			if info.Extended == nil {
				info.Extended = map[string]int64{}
			}
			info.Extended[k] = v
		}
	}
	family, size, _ := strings.Cut(name, ".")
	info.Labels[awsv1.LabelInstanceFamily] = family
	info.Labels[awsv1.LabelInstanceSize] = size
	info.Labels[awsv1.LabelInstanceCPU] = strconv.FormatInt(info.VCPU, 10)
	info.Labels[awsv1.LabelInstanceMemory] = strconv.FormatInt(info.MemoryMiB, 10)
	info.Labels[awsv1.LabelInstanceHypervisor] = string(it.Hypervisor)
	if cat, gen, ok := categoryGeneration(family); ok {
		info.Labels[awsv1.LabelInstanceCategory] = cat
		info.Labels[awsv1.LabelInstanceGeneration] = gen
	}
	if it.GpuInfo != nil && len(it.GpuInfo.Gpus) > 0 {
		g := it.GpuInfo.Gpus[0]
		info.Labels[awsv1.LabelInstanceGPUName] = strings.ToLower(aws.ToString(g.Name))
		info.Labels[awsv1.LabelInstanceGPUManufacturer] = strings.ToLower(aws.ToString(g.Manufacturer))
		info.Labels[awsv1.LabelInstanceGPUCount] = strconv.Itoa(int(aws.ToInt32(g.Count)))
		if g.MemoryInfo != nil {
			info.Labels[awsv1.LabelInstanceGPUMemory] = strconv.Itoa(int(aws.ToInt32(g.MemoryInfo.SizeInMiB)))
		}
		if strings.EqualFold(aws.ToString(g.Manufacturer), "nvidia") {
			if info.Extended == nil {
				info.Extended = map[string]int64{}
			}
			info.Extended[string(awsv1.ResourceNVIDIAGPU)] = int64(aws.ToInt32(g.Count))
		}
	}
	return info
}

// categoryGeneration splits a family such as "m5d" or "c7gn" into category "m"/"c" and generation "5"/"7".
func categoryGeneration(family string) (string, string, bool) {
	i := strings.IndexAny(family, "0123456789")
	if i <= 0 {
		return "", "", false
	}
	j := i
	for j < len(family) && family[j] >= '0' && family[j] <= '9' {
		j++
	}
	return family[:i], family[i:j], true
}

// instanceTypes builds the catalog types a NodeClass can launch: types whose architecture one of
// its AMIs serves, offered in one of its subnets' zones, priced; spot and on-demand offerings,
// marked unavailable while in the unavailable-offerings cache.
func (p *CloudProvider) instanceTypes(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*catalog.InstanceType, error) {
	infos, zones, stale, err := p.types.get(ctx)
	if err != nil {
		return nil, err
	}
	if stale != nil {
		log.FromContext(ctx).Error(stale, "EC2 instance types could not be refreshed; serving cached ones", "ec2nodeclass", nc.Name)
		p.event(nc, corev1.EventTypeWarning, "InstanceTypesStale", "DescribeInstanceTypes failed: %s", stale.Error())
	}
	settings := p.settings(nc)
	arches := amiArchitectures(nc)
	subnetZones := map[string]bool{} // zone → has a subnet with free addresses
	for _, s := range nc.Status.Subnets {
		subnetZones[s.Zone] = subnetZones[s.Zone] || !p.unavailable.IsSubnetUnavailable(s.ID)
	}
	var out []*catalog.InstanceType
	for _, info := range infos {
		if !arches[info.Arch] {
			continue
		}
		it, err := ec2data.Build(info, settings)
		if err != nil {
			return nil, fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
		}
		for _, zone := range zones[info.Name] {
			usable, ok := subnetZones[zone]
			if !ok {
				continue
			}
			if price, ok := p.prices.OnDemand(info.Name); ok {
				it.Offerings = append(it.Offerings, p.offering(info.Name, zone, v1.CapacityTypeOnDemand, price, usable))
			}
			if price, ok := p.prices.Spot(info.Name, zone); ok {
				it.Offerings = append(it.Offerings, p.offering(info.Name, zone, v1.CapacityTypeSpot, price, usable))
			}
		}
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *CloudProvider) offering(it, zone, capacityType string, price float64, subnetUsable bool) catalog.Offering {
	key := cloudprovider.UnavailableOffering{InstanceType: it, Zone: zone, CapacityType: capacityType}
	return catalog.Offering{Zone: zone, CapacityType: capacityType, Price: price, Available: subnetUsable && !p.unavailable.IsUnavailable(key)}
}

// settings are the NodeClass's kubelet, root volume and AMI family as the allocatable math reads them.
func (p *CloudProvider) settings(nc *awsv1.EC2NodeClass) ec2data.Settings {
	s := ec2data.DefaultSettings()
	s.VMMemoryOverheadPercent = p.opts.VMMemoryOverheadPercent
	s.ReservedENIs = int64(p.opts.ReservedENIs)
	switch nc.AMIFamily() {
	case awsv1.AMIFamilyBottlerocket:
		s.PodsPerCoreEnabled = false
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		s.ENILimitedPods = false
	}
	if k := nc.Spec.Kubelet; k != nil {
		s.MaxPods, s.PodsPerCore = k.MaxPods, k.PodsPerCore
		s.KubeReserved, s.SystemReserved, s.EvictionHard = k.KubeReserved, k.SystemReserved, k.EvictionHard
	}
	for _, bdm := range nc.Spec.BlockDeviceMappings {
		if bdm != nil && bdm.RootVolume && bdm.EBS != nil && bdm.EBS.VolumeSize != nil {
			s.RootVolume = bdm.EBS.VolumeSize
		}
	}
	return s
}

// amiArchitectures are the architectures the NodeClass's resolved AMIs serve.
func amiArchitectures(nc *awsv1.EC2NodeClass) map[string]bool {
	out := map[string]bool{}
	for _, ami := range nc.Status.AMIs {
		for _, r := range ami.Requirements {
			if r.Key == v1.LabelArch {
				for _, v := range r.Values {
					out[v] = true
				}
			}
		}
	}
	return out
}
