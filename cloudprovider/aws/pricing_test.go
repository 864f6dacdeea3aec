package aws_test

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ec2data "github.com/joist-dev/joist/catalog/ec2"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// TestStalePricesAreVisible: the embedded prices age from their generation date; the age is
// exported, so a dashboard or alert sees prices the Pricing API has not refreshed.
func TestStalePricesAreVisible(t *testing.T) {
	w := newWorld(t) // its clock is 2026-12-01; the Pricing API has no products, so nothing refreshes
	if err := w.provider.Prices().Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := w.clock.Since(ec2data.Embedded().PricesDate).Seconds()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "joist_aws_pricing_age_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == "on-demand" {
				if got := m.GetGauge().GetValue(); got != want {
					t.Errorf("on-demand price age = %vs, want %vs (since %s)", got, want, ec2data.Embedded().PricesDate)
				}
				return
			}
		}
	}
	t.Fatal("joist_aws_pricing_age_seconds{kind=on-demand} not exported")
}

// China and GovCloud start from their own embedded prices (CNY; GovCloud's differ from us-east-1's
// and its partition has no Pricing API to correct them); other regions from us-east-1's.
func TestEmbeddedPricesPerPartition(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for region, want := range map[string]float64{"us-west-2": 0.096, "us-gov-west-1": 0.121, "cn-north-1": 1.013} {
		if got, ok := awsprovider.NewPrices(nil, nil, region, clk).OnDemand("m5.large"); !ok || got != want {
			t.Errorf("%s: m5.large on-demand = %v (%v), want %v", region, got, ok, want)
		}
	}
}
