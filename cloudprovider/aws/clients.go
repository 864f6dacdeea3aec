// Package aws is Joist's EC2 cloud provider: it launches instances for NodeClaims with CreateFleet
// from launch templates built from an EC2NodeClass, reads instance types, offerings and prices from
// the EC2 and Pricing APIs (starting from the embedded catalog/ec2 data), and reports drift. Its
// NodeClass controller (package nodeclass) resolves the EC2NodeClass selectors; its interruption
// controller (package interruption) reacts to spot interruptions and scheduled events from SQS.
package aws

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// ClientOptions configure the AWS SDK clients.
type ClientOptions struct {
	// Region of the cluster (default: the SDK's chain, AWS_REGION…).
	Region string
	// Endpoint overrides every service's endpoint (tests point it at the fake).
	Endpoint string
	// Credentials override the SDK's default chain (IRSA, Pod Identity, instance role); tests only.
	Credentials aws.CredentialsProvider
	// RetryMaxAttempts and RetryMaxBackoff tune the SDK's standard retryer (0: its defaults, 3
	// attempts and 20 s), which retries throttling such as RequestLimitExceeded with backoff.
	RetryMaxAttempts int
	RetryMaxBackoff  time.Duration
	// DisablePricing leaves on-demand prices at the embedded ones (the Pricing API endpoint may be
	// unreachable from a private network).
	DisablePricing bool
}

// Clients are the SDK clients the provider uses.
type Clients struct {
	Region  string
	EC2     *ec2.Client
	SSM     *ssm.Client
	SQS     *sqs.Client
	IAM     *iam.Client
	EKS     *eks.Client
	Pricing *pricing.Client // nil when disabled
}

// NewClients loads the SDK configuration from the default chain and builds the clients.
func NewClients(ctx context.Context, opts ClientOptions) (*Clients, error) {
	loaders := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				if opts.RetryMaxAttempts > 0 {
					o.MaxAttempts = opts.RetryMaxAttempts
				}
				if opts.RetryMaxBackoff > 0 {
					o.MaxBackoff = opts.RetryMaxBackoff
				}
			})
		}),
	}
	if opts.Region != "" {
		loaders = append(loaders, config.WithRegion(opts.Region))
	}
	if opts.Credentials != nil {
		loaders = append(loaders, config.WithCredentialsProvider(opts.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: set --aws-region or AWS_REGION")
	}
	var endpoint *string
	if opts.Endpoint != "" {
		endpoint = aws.String(opts.Endpoint)
	}
	c := &Clients{
		Region: cfg.Region,
		EC2:    ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = endpoint }),
		SSM:    ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = endpoint }),
		SQS:    sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = endpoint }),
		IAM:    iam.NewFromConfig(cfg, func(o *iam.Options) { o.BaseEndpoint = endpoint }),
		EKS:    eks.NewFromConfig(cfg, func(o *eks.Options) { o.BaseEndpoint = endpoint }),
	}
	if !opts.DisablePricing && pricingRegion(cfg.Region) != "" {
		c.Pricing = pricing.NewFromConfig(cfg, func(o *pricing.Options) {
			o.BaseEndpoint = endpoint
			o.Region = pricingRegion(cfg.Region)
		})
	}
	return c, nil
}

// pricingRegion is where the Pricing API is served for a region's partition: the commercial
// partition's nearest of us-east-1, eu-central-1 and ap-south-1; China's cn-northwest-1 (prices in
// CNY). GovCloud has no Pricing API (""): its on-demand prices stay the embedded ones.
func pricingRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "us-gov-"):
		return ""
	case len(region) > 3 && region[:3] == "cn-":
		return "cn-northwest-1"
	case len(region) > 3 && region[:3] == "ap-":
		return "ap-south-1"
	case len(region) > 3 && region[:3] == "eu-":
		return "eu-central-1"
	}
	return "us-east-1"
}
