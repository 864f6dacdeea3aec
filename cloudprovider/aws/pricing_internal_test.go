package aws

import "testing"

func TestPricingEndpointAndCurrencyPerPartition(t *testing.T) {
	for _, c := range []struct{ region, endpoint, currency string }{
		{"us-west-2", "us-east-1", "USD"}, {"eu-west-1", "eu-central-1", "USD"}, {"ap-northeast-1", "ap-south-1", "USD"},
		{"ca-central-1", "us-east-1", "USD"}, {"cn-north-1", "cn-northwest-1", "CNY"}, {"cn-northwest-1", "cn-northwest-1", "CNY"},
		{"us-gov-west-1", "", "USD"}, {"us-gov-east-1", "", "USD"},
	} {
		if got := pricingRegion(c.region); got != c.endpoint {
			t.Errorf("pricingRegion(%s) = %q, want %q", c.region, got, c.endpoint)
		}
		if got := currency(c.region); got != c.currency {
			t.Errorf("currency(%s) = %q, want %q", c.region, got, c.currency)
		}
	}
	cny := `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"A":{"priceDimensions":{"B":{"pricePerUnit":{"CNY":"0.7350000000"}}}}}}}`
	if it, price, err := parseProduct(cny, "CNY"); err != nil || it != "m5.large" || price != 0.735 {
		t.Errorf("parseProduct(CNY document) = %s %v %v, want m5.large 0.735", it, price, err)
	}
	if _, price, _ := parseProduct(cny, "USD"); price != 0 {
		t.Errorf("a CNY-only document read as %v USD", price)
	}
}
