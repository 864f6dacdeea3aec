package ec2_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/joist-dev/joist/catalog/ec2"
)

// commercialRegions are the commercial regions that had opened when the embedded public price data
// was taken (2023-01-12), besides us-east-1; regions opened since have no embedded prices.
var commercialRegions = []string{
	"af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
	"ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ca-central-1", "eu-central-1", "eu-central-2", "eu-north-1",
	"eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "me-central-1", "me-south-1", "sa-east-1",
	"us-east-2", "us-west-1", "us-west-2",
}

func TestEveryRegionPricesTheCommonFamilies(t *testing.T) {
	regions := ec2.PricedRegions()
	for _, r := range append([]string{"us-east-1", "cn-north-1", "us-gov-east-1", "us-gov-west-1"}, commercialRegions...) {
		if !slices.Contains(regions, r) {
			t.Errorf("no embedded prices for %s", r)
			continue
		}
		p, _ := ec2.PricesFor(r)
		if p.Date.IsZero() || p.Source == "" || (p.Currency != "USD" && p.Currency != "CNY") {
			t.Errorf("%s: prices carry no date, source or currency: %s %q %q", r, p.Date, p.Source, p.Currency)
		}
		for _, it := range []string{"m5.large", "c5.xlarge", "r5.large", "t3.medium"} {
			if p.Prices[it] <= 0 {
				t.Errorf("%s: no on-demand price for %s", r, it)
			}
		}
	}
}

// The prices are each region's own, as the public price data quotes them, not us-east-1's.
func TestPricesDifferByRegion(t *testing.T) {
	for _, c := range []struct {
		region, instanceType string
		want                 float64
		currency             string
	}{
		{"us-east-1", "m5.large", 0.096, "USD"},
		{"us-east-2", "m5.large", 0.096, "USD"},
		{"eu-west-1", "m5.large", 0.107, "USD"},
		{"sa-east-1", "m5.large", 0.153, "USD"},
		{"ap-south-1", "c5.large", 0.085, "USD"},
		{"eu-central-1", "t3.medium", 0.048, "USD"},
		{"us-gov-west-1", "m5.large", 0.121, "USD"},
		{"cn-north-1", "m5.large", 1.013, "CNY"},
	} {
		p, ok := ec2.PricesFor(c.region)
		if !ok || p.Prices[c.instanceType] != c.want || p.Currency != c.currency {
			t.Errorf("%s %s = %v %s (%v), want %v %s", c.region, c.instanceType, p.Prices[c.instanceType], p.Currency, ok, c.want, c.currency)
		}
	}
}

func TestRegionCatalogCarriesTheRegionsPricesAndZones(t *testing.T) {
	its, err := ec2.InstanceTypes(ec2.Options{Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	eu, _ := ec2.PricesFor("eu-west-1")
	if len(its) != countKnown(eu.Prices) {
		t.Errorf("eu-west-1 catalog has %d types, want the %d described types the region prices", len(its), countKnown(eu.Prices))
	}
	for _, it := range its {
		if it.Name != "m5.large" {
			continue
		}
		if len(it.Offerings) != 3 || it.Offerings[0].Zone != "eu-west-1a" || it.Offerings[2].Zone != "eu-west-1c" || it.Offerings[0].Price != 0.107 {
			t.Errorf("m5.large offerings = %+v, want eu-west-1a–c at 0.107", it.Offerings)
		}
		return
	}
	t.Error("m5.large missing from the eu-west-1 catalog")
}

func countKnown(prices map[string]float64) int {
	n := 0
	for name := range prices {
		if ec2.Lookup(name) != nil {
			n++
		}
	}
	return n
}

func TestRegionWithoutPricesListsThoseWithPrices(t *testing.T) {
	_, err := ec2.InstanceTypes(ec2.Options{Region: "il-central-1"})
	var noPrices *ec2.NoPricesError
	if !errors.As(err, &noPrices) || noPrices.Region != "il-central-1" || !strings.Contains(err.Error(), "eu-west-1, eu-west-2") {
		t.Fatalf("err = %v, want a NoPricesError listing the regions with prices", err)
	}
}
