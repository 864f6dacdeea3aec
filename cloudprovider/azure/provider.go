package azure

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// Options configure the provider. The names of the matching environment variables are the AKS
// provider's (see cmd/joist/cloud_azure.go).
type Options struct {
	// ClusterName tags every resource (karpenter.azure.com_cluster) and selects the VMs this
	// provider owns.
	ClusterName string
	// Location is the cluster's region (eastus).
	Location string
	// ResourceGroup is the node resource group (MC_…) VMs and NICs are created in.
	ResourceGroup string
	// SubnetID is the default subnet of NICs (an AKSNodeClass's vnetSubnetID overrides it).
	SubnetID string
	// NetworkPlugin (azure, kubenet, none) and NetworkPluginMode (overlay or empty) pick the
	// max-pods default.
	NetworkPlugin     string
	NetworkPluginMode string
	// ClusterEndpoint, ClusterCABundle (base64 PEM) and KubeletBootstrapToken go into the nodes'
	// custom data; ClusterDNS is the kube-dns service IP.
	ClusterEndpoint       string
	ClusterCABundle       string
	KubeletBootstrapToken string
	ClusterDNS            string
	// SSHPublicKey is the admin key of the nodes (azureuser); required by Azure for Linux VMs.
	SSHPublicKey string
	// VMMemoryOverheadPercent of memory the hypervisor keeps (default 0.075).
	VMMemoryOverheadPercent float64
	// SKUsTTL is how long Resource SKUs answers are reused (default 1 h).
	SKUsTTL time.Duration
	// PollFrequency of long-running operations when ARM sends no Retry-After (default 2 s).
	PollFrequency time.Duration
}

func (o *Options) defaults() {
	if o.VMMemoryOverheadPercent == 0 {
		o.VMMemoryOverheadPercent = 0.075
	}
	if o.PollFrequency == 0 {
		o.PollFrequency = 2 * time.Second
	}
	if o.SKUsTTL == 0 {
		o.SKUsTTL = time.Hour
	}
	if o.NetworkPlugin == "" {
		o.NetworkPlugin, o.NetworkPluginMode = "azure", "overlay"
	}
}

// CloudProvider is the Azure cloud provider.
type CloudProvider struct {
	kube        client.Client
	clients     *Clients
	opts        Options
	clock       clock.Clock
	unavailable *cloudprovider.UnavailableOfferings
	prices      *Prices
	skus        *skuCache
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns the provider. unavailable is shared with the launch path.
func New(kube client.Client, clients *Clients, unavailable *cloudprovider.UnavailableOfferings, clk clock.Clock, opts Options) *CloudProvider {
	opts.defaults()
	return &CloudProvider{
		kube: kube, clients: clients, opts: opts, clock: clk, unavailable: unavailable,
		prices: NewPrices(clients.Prices, opts.Location, clk),
		skus:   &skuCache{client: clients.SKUs, location: opts.Location, clock: clk, ttl: opts.SKUsTTL},
	}
}

func (p *CloudProvider) pollOptions() *runtime.PollUntilDoneOptions {
	return &runtime.PollUntilDoneOptions{Frequency: p.opts.PollFrequency}
}

// Name is "azure".
func (p *CloudProvider) Name() string { return "azure" }

// UnavailableOfferings is the cache the launch path marks.
func (p *CloudProvider) UnavailableOfferings() *cloudprovider.UnavailableOfferings {
	return p.unavailable
}

// Prices are the provider's price data (refreshed by the pricing runnable).
func (p *CloudProvider) Prices() *Prices { return p.prices }

// Clients are the provider's SDK clients.
func (p *CloudProvider) Clients() *Clients { return p.clients }

// Options are the provider's settings, defaulted.
func (p *CloudProvider) Options() Options { return p.opts }

// GetInstanceTypes returns what the pool's AKSNodeClass can launch; nothing while the class is
// missing or not Ready (its status says why).
func (p *CloudProvider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*catalog.InstanceType, error) {
	nc := &azv1beta1.AKSNodeClass{}
	if ready, err := cloudprovider.GetReadyPoolNodeClass(ctx, p.kube, nodeClassKind, np, nc, azv1beta1.ConditionTypeReady); !ready {
		return nil, err
	}
	return p.instanceTypes(ctx, nc)
}

var nodeClassKind = cloudprovider.NodeClassKind{Group: azv1beta1.GroupVersion.Group, Kind: "AKSNodeClass"}

// nodeClass returns the claim's AKSNodeClass.
func (p *CloudProvider) nodeClass(ctx context.Context, claim *v1.NodeClaim) (*azv1beta1.AKSNodeClass, error) {
	nc := &azv1beta1.AKSNodeClass{}
	if err := cloudprovider.GetClaimNodeClass(ctx, p.kube, nodeClassKind, claim, nc); err != nil {
		return nil, err
	}
	return nc, nil
}
