package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
)

// livePrices asks the Pricing API (served from us-east-1) for region's on-demand prices.
func livePrices(ctx context.Context, region string) (map[string]float64, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"))
	if err != nil {
		return nil, fmt.Errorf("loading AWS config: %w", err)
	}
	return awsprovider.OnDemandPrices(ctx, pricing.NewFromConfig(cfg), region)
}
