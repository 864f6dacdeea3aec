package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"time"

	ec2instancesinfo "github.com/cristim/ec2-instances-info"
)

// ec2InstancesInfoModule is the Go module that embeds ec2instances.info's instance data
// (data/instances.json): for every instance type, the Linux on-demand price per hour in USD in each
// commercial region and GovCloud, scraped from AWS's public price lists. It is the only public
// source of other regions' prices found that this machine can reach (docs/aws.md lists the others
// tried). It has no China prices.
const ec2InstancesInfoModule = "github.com/cristim/ec2-instances-info"

// pricesSource is one set of per-region on-demand price tables and where they came from.
type pricesSource struct {
	name     string // repository or module, with its commit or version
	date     time.Time
	currency string
	tables   map[string]map[string]float64 // region → instance type → price
}

// ec2InstancesInfoPrices reads the module's data through its own API.
func ec2InstancesInfoPrices() (pricesSource, error) {
	version, err := moduleVersion(ec2InstancesInfoModule)
	if err != nil {
		return pricesSource{}, err
	}
	date, err := pseudoVersionTime(version)
	if err != nil {
		return pricesSource{}, err
	}
	data, err := ec2instancesinfo.Data()
	if err != nil {
		return pricesSource{}, fmt.Errorf("reading %s data: %w", ec2InstancesInfoModule, err)
	}
	return pricesSource{
		name:     ec2InstancesInfoModule + "@" + version + " (ec2instances.info data/instances.json)",
		date:     date,
		currency: "USD",
		tables:   linuxOnDemand(*data),
	}, nil
}

// linuxOnDemand turns the module's instance list into region → type → Linux on-demand price,
// leaving out prices that are absent or zero (the type is not sold on demand there).
func linuxOnDemand(data ec2instancesinfo.InstanceData) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, it := range data {
		for region, p := range it.Pricing {
			if p.Linux.OnDemand <= 0 {
				continue
			}
			if out[region] == nil {
				out[region] = map[string]float64{}
			}
			out[region][it.InstanceType] = p.Linux.OnDemand
		}
	}
	return out
}

// moduleVersion is the version of a dependency this binary was built with.
func moduleVersion(path string) (string, error) {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				if dep.Replace != nil {
					return "", fmt.Errorf("%s is replaced by %s: the recorded source would be wrong", path, dep.Replace.Path)
				}
				return dep.Version, nil
			}
		}
	}
	return "", fmt.Errorf("no build information for %s: run the generator with `go run`", path)
}

var pseudoVersion = regexp.MustCompile(`-(?:0\.)?(\d{14})-[0-9a-f]{12}$`)

// pseudoVersionTime is the commit time a pseudo-version carries: the date of the module's data.
func pseudoVersionTime(version string) (time.Time, error) {
	m := pseudoVersion.FindStringSubmatch(version)
	if m == nil {
		return time.Time{}, fmt.Errorf("%s is not a pseudo-version: take the data's date from its commit", version)
	}
	return time.Parse("20060102150405", m[1])
}
