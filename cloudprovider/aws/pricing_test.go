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
	embedded, _ := ec2data.PricesFor(w.clients.Region)
	want := w.clock.Since(embedded.Date).Seconds()
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
					t.Errorf("on-demand price age = %vs, want %vs (since %s)", got, want, embedded.Date)
				}
				return
			}
		}
	}
	t.Fatal("joist_aws_pricing_age_seconds{kind=on-demand} not exported")
}

// Each region starts from its own embedded prices: commercial regions' (USD), China's (CNY) and
// GovCloud's (no Pricing API there to correct them). A region opened after the embedded data was
// taken starts, as in Karpenter, from us-east-1's until the Pricing API answers.
func TestEmbeddedPricesPerPartition(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for region, want := range map[string]float64{
		"us-west-2": 0.096, "eu-west-1": 0.107, "sa-east-1": 0.153, "us-gov-west-1": 0.121, "cn-north-1": 1.013, "il-central-1": 0.096,
	} {
		if got, ok := awsprovider.NewPrices(nil, nil, region, clk).OnDemand("m5.large"); !ok || got != want {
			t.Errorf("%s: m5.large on-demand = %v (%v), want %v", region, got, ok, want)
		}
	}
}
