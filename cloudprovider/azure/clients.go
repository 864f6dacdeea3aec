// Package azure is Joist's Azure cloud provider for AKS: it launches one NIC and one VM per NodeClaim
// from an AKSNodeClass, reads VM sizes from the Resource SKUs API (with catalog/azure's AKS
// allocatable math), prices from the Azure Retail Prices API, and reports drift. Its AKSNodeClass
// controller (controllers/aksnodeclass) resolves node images, the Kubernetes version and the subnet.
package azure

import (
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// ClientOptions configure the Azure SDK clients.
type ClientOptions struct {
	// SubscriptionID of the cluster's node resource group.
	SubscriptionID string
	// Endpoint overrides the Resource Manager endpoint (tests point it at the fake); it must then
	// be http(s)://host.
	Endpoint string
	// PricesEndpoint overrides https://prices.azure.com (tests).
	PricesEndpoint string
	// Credential overrides the default chain (workload identity, then managed identity); tests only.
	Credential azcore.TokenCredential
	// Transport overrides the HTTP client (tests).
	Transport policy.Transporter
	// Retry tunes the SDK's retry policy, which honours Retry-After on 429 and 5xx (zero: its
	// defaults, 3 retries).
	Retry policy.RetryOptions
	// DisablePricing leaves prices at the embedded ones (the Retail Prices API may be unreachable).
	DisablePricing bool
}

// Clients are the SDK clients the provider uses.
type Clients struct {
	SubscriptionID string
	VMs            *armcompute.VirtualMachinesClient
	SKUs           *armcompute.ResourceSKUsClient
	Images         *armcompute.CommunityGalleryImageVersionsClient
	NICs           *armnetwork.InterfacesClient
	Subnets        *armnetwork.SubnetsClient
	Prices         *RetailPrices // nil when disabled
}

// NewClients builds the clients. Without a Credential it authenticates with workload identity
// (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE, as the AKS workload identity
// webhook injects them) and falls back to the managed identity of the node.
func NewClients(opts ClientOptions) (*Clients, error) {
	if opts.SubscriptionID == "" {
		return nil, fmt.Errorf("no Azure subscription ID")
	}
	cred := opts.Credential
	if cred == nil {
		var chain []azcore.TokenCredential
		if wi, err := azidentity.NewWorkloadIdentityCredential(nil); err == nil {
			chain = append(chain, wi)
		}
		mi, err := azidentity.NewManagedIdentityCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("creating managed identity credential: %w", err)
		}
		chain = append(chain, mi)
		if cred, err = azidentity.NewChainedTokenCredential(chain, nil); err != nil {
			return nil, fmt.Errorf("creating credential chain: %w", err)
		}
	}
	armOpts := &arm.ClientOptions{DisableRPRegistration: true}
	armOpts.Retry = opts.Retry
	if opts.Transport != nil {
		armOpts.Transport = opts.Transport
	}
	if opts.Endpoint != "" {
		armOpts.Cloud = cloud.Configuration{
			ActiveDirectoryAuthorityHost: cloud.AzurePublic.ActiveDirectoryAuthorityHost,
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Endpoint: opts.Endpoint, Audience: "https://management.core.windows.net/"},
			},
		}
		armOpts.InsecureAllowCredentialWithHTTP = true // the fake listens on http://127.0.0.1
	}
	c := &Clients{SubscriptionID: opts.SubscriptionID}
	var err error
	if c.VMs, err = armcompute.NewVirtualMachinesClient(opts.SubscriptionID, cred, armOpts); err != nil {
		return nil, err
	}
	if c.SKUs, err = armcompute.NewResourceSKUsClient(opts.SubscriptionID, cred, armOpts); err != nil {
		return nil, err
	}
	if c.Images, err = armcompute.NewCommunityGalleryImageVersionsClient(opts.SubscriptionID, cred, armOpts); err != nil {
		return nil, err
	}
	if c.NICs, err = armnetwork.NewInterfacesClient(opts.SubscriptionID, cred, armOpts); err != nil {
		return nil, err
	}
	if c.Subnets, err = armnetwork.NewSubnetsClient(opts.SubscriptionID, cred, armOpts); err != nil {
		return nil, err
	}
	if !opts.DisablePricing {
		endpoint := opts.PricesEndpoint
		if endpoint == "" {
			endpoint = "https://prices.azure.com"
		}
		httpClient := http.DefaultClient
		if t, ok := opts.Transport.(*http.Client); ok {
			httpClient = t
		}
		c.Prices = &RetailPrices{Endpoint: endpoint, HTTP: httpClient}
	}
	return c, nil
}
