package simulate

import (
	"bytes"
	"strings"
	"testing"
)

// --catalog embedded-ec2 --region R prices the embedded EC2 types with R's own prices, in R's zones.
func TestEC2CatalogTakesTheRegionsPrices(t *testing.T) {
	for region, want := range map[string]float64{"": 0.096, "us-east-1": 0.096, "eu-west-1": 0.107, "sa-east-1": 0.153} {
		its, name, err := loadCatalog("embedded-ec2", region)
		if err != nil {
			t.Fatalf("%q: %v", region, err)
		}
		zone := region + "a"
		if region == "" {
			zone, region = "us-east-1a", "us-east-1"
		}
		if !strings.HasPrefix(name, "embedded-ec2 ("+region+", USD prices of ") {
			t.Errorf("%s: catalog name %q does not say the region, currency and date", region, name)
		}
		var found bool
		for _, it := range its {
			if it.Name != "m5.large" {
				continue
			}
			for _, o := range it.Offerings {
				if o.CapacityType == "on-demand" && o.Zone == zone {
					found = o.Price == want
				}
			}
		}
		if !found {
			t.Errorf("%s: no m5.large on-demand offering in %s at %v", region, zone, want)
		}
	}
}

func TestRegionErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"-f", "x.yaml", "--catalog", "embedded-ec2", "--region", "eu-wst-1"}, 1,
			[]string{"--region", `"eu-wst-1"`, "eu-west-1, eu-west-2", "Pricing API"}},
		{[]string{"-f", "x.yaml", "--region", "eu-west-1"}, 2, []string{"--region eu-west-1", "--catalog embedded-ec2"}},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(tt.args, &stdout, &stderr)
		for _, w := range tt.want {
			if code != tt.code || !strings.Contains(stderr.String(), w) {
				t.Errorf("Main(%q) = %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, w)
			}
		}
	}
}
