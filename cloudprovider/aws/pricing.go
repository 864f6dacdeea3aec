package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	ec2data "github.com/joist-dev/joist/catalog/ec2"
)

var priceAge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "joist_aws_pricing_age_seconds",
	Help: "Age of the price data in use, by kind (on-demand, spot). Embedded on-demand prices age from the date they were generated.",
}, []string{"kind"})

func init() { metrics.Registry.MustRegister(priceAge) }

// Prices holds on-demand prices (embedded, refreshed from the Pricing API when reachable) and
// spot prices per zone (DescribeSpotPriceHistory). Safe for concurrent use.
type Prices struct {
	ec2     *ec2.Client
	pricing *pricing.Client // nil: on-demand prices stay the embedded ones
	region  string
	clock   clock.PassiveClock

	mu           sync.RWMutex
	onDemand     map[string]float64
	onDemandDate time.Time
	onDemandFrom string                        // the region whose prices these are when not region's own (no embedded table yet)
	spot         map[string]map[string]float64 // type → zone → price
	spotDate     time.Time
}

// NewPrices starts from the region's embedded on-demand prices (catalog/ec2: every commercial
// region open when the public price data was taken, China in CNY, GovCloud). A region without them
// (opened since) starts, as in Karpenter, from us-east-1's until the Pricing API answers; the age
// metric and a log line at each refresh make that visible.
func NewPrices(ec2c *ec2.Client, pricingc *pricing.Client, region string, clk clock.PassiveClock) *Prices {
	p := &Prices{ec2: ec2c, pricing: pricingc, region: region, clock: clk, onDemand: map[string]float64{}, spot: map[string]map[string]float64{}}
	table, ok := ec2data.PricesFor(region)
	if !ok {
		p.onDemandFrom = ec2data.Embedded().PricesRegion
		table, _ = ec2data.PricesFor(p.onDemandFrom)
	}
	for name, price := range table.Prices {
		p.onDemand[name] = price
	}
	p.onDemandDate = table.Date
	return p
}

// OnDemand returns the on-demand price of an instance type.
func (p *Prices) OnDemand(instanceType string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.onDemand[instanceType]
	return v, ok
}

// Spot returns the latest spot price of an instance type in a zone.
func (p *Prices) Spot(instanceType, zone string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.spot[instanceType][zone]
	return v, ok
}

// Refresh updates on-demand prices (when a Pricing client is configured) and spot prices. A
// failure keeps the previous prices; the error says which part failed and how old the kept data is.
func (p *Prices) Refresh(ctx context.Context) error {
	return errors.Join(p.RefreshOnDemand(ctx), p.RefreshSpot(ctx))
}

// RefreshOnDemand updates on-demand prices from the Pricing API, when a client is configured.
func (p *Prices) RefreshOnDemand(ctx context.Context) error {
	var errs []error
	if p.pricing != nil {
		if prices, err := OnDemandPrices(ctx, p.pricing, p.region); err != nil {
			staleServed.WithLabelValues("on-demand-prices").Inc()
			errs = append(errs, fmt.Errorf("refreshing on-demand prices (keeping prices from %s): %w", p.onDemandDate.Format(time.RFC3339), err))
		} else if len(prices) > 0 {
			p.mu.Lock()
			p.onDemand, p.onDemandDate, p.onDemandFrom = prices, p.clock.Now(), ""
			p.mu.Unlock()
		}
	}
	p.report(ctx, true)
	return errors.Join(errs...)
}

// RefreshSpot updates spot prices from DescribeSpotPriceHistory.
func (p *Prices) RefreshSpot(ctx context.Context) error {
	spot, err := p.spotPrices(ctx)
	if err != nil {
		staleServed.WithLabelValues("spot-prices").Inc()
		p.report(ctx, false)
		return fmt.Errorf("refreshing spot prices (keeping the previous ones): %w", err)
	}
	p.mu.Lock()
	p.spot, p.spotDate = spot, p.clock.Now()
	p.mu.Unlock()
	p.report(ctx, false)
	return nil
}

// Refresher returns a runnable refreshing spot prices every spotEvery and on-demand prices every
// onDemandEvery, starting with both; failures are logged with the age of the data kept.
func (p *Prices) Refresher(onDemandEvery, spotEvery time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		logger := log.FromContext(ctx).WithName("pricing")
		run := func(f func(context.Context) error) {
			if err := f(ctx); err != nil {
				logger.Error(err, "refreshing prices")
			}
		}
		run(p.RefreshOnDemand)
		run(p.RefreshSpot)
		od, spot := time.NewTicker(onDemandEvery), time.NewTicker(spotEvery)
		defer od.Stop()
		defer spot.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-od.C:
				run(p.RefreshOnDemand)
			case <-spot.C:
				run(p.RefreshSpot)
			}
		}
	}
}

// staleAfter is the age from which price data is logged as stale.
const staleAfter = 7 * 24 * time.Hour

// report sets the age metrics; logStale also logs on-demand data older than staleAfter.
func (p *Prices) report(ctx context.Context, logStale bool) {
	p.mu.RLock()
	odAge, spotAge := p.clock.Since(p.onDemandDate), p.clock.Since(p.spotDate)
	spotKnown := !p.spotDate.IsZero()
	from := p.onDemandFrom
	p.mu.RUnlock()
	priceAge.WithLabelValues("on-demand").Set(odAge.Seconds())
	if spotKnown {
		priceAge.WithLabelValues("spot").Set(spotAge.Seconds())
	}
	if logStale && from != "" {
		log.FromContext(ctx).Info("no embedded on-demand prices for this region: using another region's until the Pricing API answers",
			"region", p.region, "pricesOf", from)
	}
	if logStale && odAge > staleAfter {
		log.FromContext(ctx).Info("on-demand prices are stale", "age", odAge.Round(time.Hour).String(), "region", p.region)
	}
}

// spotPrices reads the current Linux spot price of every type and zone.
func (p *Prices) spotPrices(ctx context.Context) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	latest := map[string]map[string]time.Time{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(p.clock.Now()),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, sp := range page.SpotPriceHistory {
			addSpotPrice(out, latest, sp)
		}
	}
	return out, nil
}

func addSpotPrice(out map[string]map[string]float64, latest map[string]map[string]time.Time, sp ec2types.SpotPrice) {
	it, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
	price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
	if err != nil || it == "" || zone == "" {
		return
	}
	ts := aws.ToTime(sp.Timestamp)
	if out[it] == nil {
		out[it], latest[it] = map[string]float64{}, map[string]time.Time{}
	}
	if prev, ok := latest[it][zone]; ok && prev.After(ts) {
		return
	}
	out[it][zone], latest[it][zone] = price, ts
}

// OnDemandPrices reads Linux, shared-tenancy on-demand prices of every instance type in region
// from the Pricing API's GetProducts.
func OnDemandPrices(ctx context.Context, c *pricing.Client, region string) (map[string]float64, error) {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Value: aws.String(value), Type: pricingtypes.FilterTypeTermMatch}
	}
	pages := pricing.NewGetProductsPaginator(c, &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			filter("regionCode", region), filter("operatingSystem", "Linux"), filter("tenancy", "Shared"),
			filter("preInstalledSw", "NA"), filter("capacitystatus", "Used"), filter("operation", "RunInstances"),
		},
	})
	out := map[string]float64{}
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("getting products: %w", err)
		}
		for _, doc := range page.PriceList {
			it, price, err := parseProduct(doc, currency(region))
			if err != nil {
				return nil, err
			}
			if it != "" && price > 0 {
				out[it] = price
			}
		}
	}
	return out, nil
}

// product is the part of a Pricing API price-list document read here.
type product struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// currency is what the Pricing API quotes a region's prices in: CNY in China, USD elsewhere.
func currency(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "CNY"
	}
	return "USD"
}

func parseProduct(doc, currency string) (string, float64, error) {
	var p product
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		return "", 0, fmt.Errorf("parsing price list document: %w", err)
	}
	for _, term := range p.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			amount, ok := dim.PricePerUnit[currency]
			if !ok {
				continue
			}
			price, err := strconv.ParseFloat(amount, 64)
			if err != nil {
				return "", 0, fmt.Errorf("price %q %s of %s: %w", amount, currency, p.Product.Attributes.InstanceType, err)
			}
			return p.Product.Attributes.InstanceType, price, nil
		}
	}
	return p.Product.Attributes.InstanceType, 0, nil
}
