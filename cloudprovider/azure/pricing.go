package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	azuredata "github.com/joist-dev/joist/catalog/azure"
)

// RetailPrices reads the Azure Retail Prices API (no authentication).
type RetailPrices struct {
	Endpoint string
	HTTP     *http.Client
}

type retailPage struct {
	Items []struct {
		ArmSKUName    string  `json:"armSkuName"`
		RetailPrice   float64 `json:"retailPrice"`
		SKUName       string  `json:"skuName"`
		ProductName   string  `json:"productName"`
		UnitOfMeasure string  `json:"unitOfMeasure"`
		Type          string  `json:"type"`
	} `json:"Items"`
	NextPageLink string `json:"NextPageLink"`
}

// Linux returns the region's Linux pay-as-you-go prices per hour: on-demand and spot by VM size.
func (r *RetailPrices) Linux(ctx context.Context, region string) (onDemand, spot map[string]float64, err error) {
	filter := fmt.Sprintf("serviceName eq 'Virtual Machines' and armRegionName eq '%s' and priceType eq 'Consumption'", region)
	next := r.Endpoint + "/api/retail/prices?api-version=2023-01-01-preview&$filter=" + url.QueryEscape(filter)
	onDemand, spot = map[string]float64{}, map[string]float64{}
	for next != "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, nil, err
		}
		resp, err := r.HTTP.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("retail prices: %w", err)
		}
		var page retailPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("retail prices: HTTP %d", resp.StatusCode)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding retail prices: %w", err)
		}
		for _, it := range page.Items {
			if it.ArmSKUName == "" || it.UnitOfMeasure != "1 Hour" || strings.Contains(it.ProductName, "Windows") || strings.Contains(it.SKUName, "Low Priority") {
				continue
			}
			if strings.Contains(it.SKUName, "Spot") {
				spot[it.ArmSKUName] = it.RetailPrice
			} else {
				onDemand[it.ArmSKUName] = it.RetailPrice
			}
		}
		next = page.NextPageLink
	}
	return onDemand, spot, nil
}

// Prices are the region's on-demand and spot prices: the embedded on-demand prices (spot estimated
// from them) until the Retail Prices API answers.
type Prices struct {
	api    *RetailPrices
	region string
	clock  clock.Clock

	mu       sync.RWMutex
	onDemand map[string]float64
	spot     map[string]float64
	updated  time.Time
}

// NewPrices seeds the prices from the embedded data.
func NewPrices(api *RetailPrices, region string, clk clock.Clock) *Prices {
	p := &Prices{api: api, region: region, clock: clk, onDemand: map[string]float64{}, spot: map[string]float64{}}
	data := azuredata.Embedded()
	for _, s := range data.SKUs {
		if price, ok := s.OnDemandPrices[region]; ok {
			p.onDemand[s.Name] = price
			p.spot[s.Name] = price * azuredata.EstimatedSpotPriceFactor
		}
	}
	p.updated = data.PricesDate
	return p
}

// OnDemand is a size's on-demand price.
func (p *Prices) OnDemand(size string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.onDemand[size]
	return v, ok
}

// Spot is a size's spot price.
func (p *Prices) Spot(size string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.spot[size]
	return v, ok
}

// Updated is when the prices were taken.
func (p *Prices) Updated() time.Time {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.updated
}

// Refresh replaces the prices with the Retail Prices API's; a size the API does not price keeps
// its previous price.
func (p *Prices) Refresh(ctx context.Context) error {
	if p.api == nil {
		return nil
	}
	onDemand, spot, err := p.api.Linux(ctx, p.region)
	if err != nil {
		return err
	}
	if len(onDemand) == 0 {
		return fmt.Errorf("the Retail Prices API returned no Linux prices for %s", p.region)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range onDemand {
		p.onDemand[k] = v
	}
	for k, v := range spot {
		p.spot[k] = v
	}
	p.updated = p.clock.Now()
	return nil
}

// Refresher refreshes the prices every interval (retrying after retry on failure) until ctx ends.
func (p *Prices) Refresher(interval, retry time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		for {
			wait := interval
			if err := p.Refresh(ctx); err != nil {
				log.FromContext(ctx).Error(err, "refreshing Azure prices; keeping the previous ones", "region", p.region)
				wait = retry
			}
			select {
			case <-ctx.Done():
				return nil
			case <-p.clock.After(wait):
			}
		}
	}
}
