package aws_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ec2data "github.com/joist-dev/joist/catalog/ec2"
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
