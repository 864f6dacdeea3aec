package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/catalog"
	azuredata "github.com/joist-dev/joist/catalog/azure"
	ec2data "github.com/joist-dev/joist/catalog/ec2"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/kwok"
)

// The providers --cloud-provider (or $CLOUD_PROVIDER) selects. The binary defaults to kwok, which
// needs nothing but a cluster (the demo, the end-to-end suites and `make run` rely on it); the
// install manifests select explicitly: config/default aws, config/kwok kwok.
const (
	providerKWOK   = "kwok"
	providerAWS    = "aws"
	cloudProviderF = "cloud-provider"
	cloudProviderE = "CLOUD_PROVIDER"
)

// cloudFlags select and configure the cloud provider.
type cloudFlags struct {
	provider    string
	catalogPath string
	errorRate   float64
	soldOut     string
	seed        int64
	aws         awsFlags
	azure       azureFlags
	faults      kwok.Faults
	env         *envFlags
}

func (c *cloudFlags) bind(fs *flag.FlagSet) {
	c.env = newEnvFlags(fs)
	c.env.String(&c.provider, cloudProviderF, cloudProviderE, providerKWOK, "Cloud provider: kwok (simulated nodes run by a KWOK process), aws (EC2, see docs/aws.md) or azure (AKS, see docs/azure.md).")
	fs.StringVar(&c.catalogPath, "catalog", "", "Instance-type catalog file for the kwok provider (default: the embedded synthetic catalog; \""+ec2data.CatalogName+"\": the embedded real EC2 types and prices; \""+azuredata.CatalogName+"\": the embedded real Azure VM sizes and prices).")
	fs.Float64Var(&c.errorRate, "kwok-error-rate", 0, "Fraction (0–1) of kwok launches that fail with a transient error, for testing.")
	fs.StringVar(&c.soldOut, "kwok-sold-out-offerings", "", "Comma-separated instanceType:zone:capacityType offerings that always fail with insufficient capacity, for testing.")
	fs.Int64Var(&c.seed, "kwok-seed", 1, "Seed of the kwok failure injection.")
	fs.Float64Var(&c.faults.DeleteErrorRate, "kwok-delete-error-rate", 0, "Fraction (0–1) of kwok terminations that fail with a transient error, for testing.")
	fs.Float64Var(&c.faults.LatencySpikeRate, "kwok-latency-spike-rate", 0, "Fraction (0–1) of kwok API calls delayed by --kwok-latency-spike, for testing.")
	fs.DurationVar(&c.faults.LatencySpike, "kwok-latency-spike", 10*time.Second, "Delay of a kwok API call hit by a latency spike.")
	c.aws.bind(fs, c.env)
	c.azure.bind(fs, c.env)
}

// validate checks the settings after parsing, before anything connects anywhere, so a bad install
// fails at once with the flag, the variable and the fix.
func (c *cloudFlags) validate() error {
	switch c.provider {
	case providerKWOK:
		if c.errorRate < 0 || c.errorRate > 1 {
			return fmt.Errorf("--kwok-error-rate must be between 0 and 1, got %v", c.errorRate)
		}
		return nil
	case providerAWS:
		if err := c.env.check(); err != nil { // every typed variable is an aws setting
			return err
		}
		return c.aws.validate(c.env, c.providerSource())
	case providerAzure:
		if err := c.env.check(); err != nil {
			return err
		}
		if c.aws.vmMemoryOverhead < 0 || c.aws.vmMemoryOverhead >= 1 {
			return fmt.Errorf("VM memory overhead from %s must be a fraction in [0, 1): set $%s or --%s to e.g. 0.075",
				c.env.source(vmOverheadF), vmOverheadE, vmOverheadF)
		}
		return c.azure.validate(c.env, c.providerSource())
	}
	return fmt.Errorf("cloud provider %q (from %s) is not supported: set --%s or $%s to %s, %s or %s",
		c.provider, c.providerSource(), cloudProviderF, cloudProviderE, providerAWS, providerAzure, providerKWOK)
}

// providerSource says what selected the provider, for errors and the start-up log.
func (c *cloudFlags) providerSource() string { return c.env.source(cloudProviderF) }

func (c *cloudFlags) build(kube client.Client) (cloudprovider.CloudProvider, error) {
	unavailable := cloudprovider.NewUnavailableOfferings(clock.RealClock{}, 0)
	if c.provider == providerAWS {
		return c.aws.build(kube, unavailable)
	}
	if c.provider == providerAzure {
		return c.azure.build(kube, unavailable, c.aws.vmMemoryOverhead)
	}
	its := catalog.Default()
	switch {
	case c.catalogPath == azuredata.CatalogName:
		// Real Azure VM sizes and on-demand prices (eastus); spot at an estimated fraction.
		its = azuredata.Catalog()
	case c.catalogPath == ec2data.CatalogName:
		// Real EC2 shapes and us-east-1 on-demand prices; spot at an estimated fraction of on-demand.
		var err error
		if its, err = ec2data.InstanceTypes(ec2data.Options{Zones: catalog.Zones, SpotPriceFactor: ec2data.EstimatedSpotFactor}); err != nil {
			return nil, fmt.Errorf("--catalog %s: %w", ec2data.CatalogName, err)
		}
	case c.catalogPath != "":
		data, err := os.ReadFile(c.catalogPath)
		if err != nil {
			return nil, fmt.Errorf("reading --catalog: %w", err)
		}
		if its, err = catalog.Parse(data); err != nil {
			return nil, fmt.Errorf("parsing --catalog %s: %w", c.catalogPath, err)
		}
	}
	soldOut, err := parseOfferings(c.soldOut, its)
	if err != nil {
		return nil, err
	}
	return &kwokCloud{CloudProvider: kwok.New(kube, unavailable, kwok.Options{
		InstanceTypes: its, ErrorRate: c.errorRate, UnavailableOfferings: soldOut, Seed: c.seed, Faults: c.faults,
	}), unavailable: unavailable}, nil
}

// kwokCloud shares the kwok provider's unavailable-offerings cache with the launch path.
type kwokCloud struct {
	*kwok.CloudProvider
	unavailable *cloudprovider.UnavailableOfferings
}

// UnavailableOfferings is the cache the launch path marks.
func (k *kwokCloud) UnavailableOfferings() *cloudprovider.UnavailableOfferings { return k.unavailable }

// parseOfferings reads "type:zone:capacityType,…", checking each names a catalog offering.
func parseOfferings(s string, its []*catalog.InstanceType) ([]cloudprovider.UnavailableOffering, error) {
	if s == "" {
		return nil, nil
	}
	known := map[cloudprovider.UnavailableOffering]bool{}
	for _, it := range its {
		for _, o := range it.Offerings {
			known[cloudprovider.UnavailableOffering{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = true
		}
	}
	var out []cloudprovider.UnavailableOffering
	for _, item := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(item), ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("--kwok-sold-out-offerings: %q is not instanceType:zone:capacityType", item)
		}
		o := cloudprovider.UnavailableOffering{InstanceType: parts[0], Zone: parts[1], CapacityType: parts[2]}
		if !known[o] {
			return nil, fmt.Errorf("--kwok-sold-out-offerings: %q is not an offering of the catalog", item)
		}
		out = append(out, o)
	}
	return out, nil
}
