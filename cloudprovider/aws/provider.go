package aws

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// Options configure the provider.
type Options struct {
	// ClusterName tags every resource (kubernetes.io/cluster/<name>=owned, eks:eks-cluster-name)
	// and selects the instances this provider owns.
	ClusterName string
	// ClusterEndpoint, ClusterCABundle (base64 PEM), ClusterCIDR (the service CIDR) and
	// KubernetesVersion ("1.33") override what eks:DescribeCluster answers (see ClusterDiscovery).
	ClusterEndpoint   string
	ClusterCABundle   string
	ClusterCIDR       string
	KubernetesVersion string
	// ClusterInfoTTL is how long a DescribeCluster answer is reused (default 10 m).
	ClusterInfoTTL time.Duration
	// VMMemoryOverheadPercent of memory the hypervisor keeps (default 0.075).
	VMMemoryOverheadPercent float64
	// ReservedENIs are left out of max pods (VPC CNI custom networking).
	ReservedENIs int
	// InstanceTypesTTL is how long DescribeInstanceTypes answers are reused (default 5 m).
	InstanceTypesTTL time.Duration
	// MaxFleetInstanceTypes caps the instance types of one CreateFleet (default 60).
	MaxFleetInstanceTypes int
	// InstanceCacheTTL is how long one DescribeInstances of the cluster's instances answers drift,
	// garbage collection and Get (default 30 s).
	InstanceCacheTTL time.Duration
}

func (o *Options) defaults() {
	if o.VMMemoryOverheadPercent == 0 {
		o.VMMemoryOverheadPercent = 0.075
	}
	if o.InstanceTypesTTL == 0 {
		o.InstanceTypesTTL = 5 * time.Minute
	}
	if o.MaxFleetInstanceTypes == 0 {
		o.MaxFleetInstanceTypes = 60
	}
	if o.InstanceCacheTTL == 0 {
		o.InstanceCacheTTL = 30 * time.Second
	}
}

// CloudProvider is the EC2 cloud provider.
type CloudProvider struct {
	kube        client.Client
	clients     *Clients
	opts        Options
	clock       clock.Clock
	unavailable *cloudprovider.UnavailableOfferings
	prices      *Prices
	types       *instanceTypeCache
	templates   *launchTemplates
	terminator  *terminator
	launches    *fleetLaunches
	instances   *instanceCache
	recorder    events.EventRecorder // nil until UseEventRecorder
	cluster     *ClusterDiscovery
}

// UseEventRecorder makes the provider report on Kubernetes objects (e.g. an EC2NodeClass served
// stale instance types); without one it only logs.
func (p *CloudProvider) UseEventRecorder(r events.EventRecorder) { p.recorder = r }

func (p *CloudProvider) event(obj runtime.Object, eventType, reason, note string, args ...any) {
	if p.recorder != nil {
		p.recorder.Eventf(obj, nil, eventType, reason, "Provision", note, args...)
	}
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns the provider. unavailable is shared with the launch path, which marks offerings
// that failed for lack of capacity.
func New(kube client.Client, clients *Clients, unavailable *cloudprovider.UnavailableOfferings, clk clock.Clock, opts Options) *CloudProvider {
	opts.defaults()
	return &CloudProvider{
		kube: kube, clients: clients, opts: opts, clock: clk, unavailable: unavailable,
		prices:     NewPrices(clients.EC2, clients.Pricing, clients.Region, clk),
		types:      &instanceTypeCache{ec2: clients.EC2, clock: clk, ttl: opts.InstanceTypesTTL},
		templates:  &launchTemplates{ec2: clients.EC2, known: map[string]bool{}},
		terminator: newTerminator(clients.EC2),
		launches:   newFleetLaunches(clk),
		instances:  &instanceCache{ec2: clients.EC2, cluster: opts.ClusterName, clock: clk, ttl: opts.InstanceCacheTTL},
		cluster:    newProviderDiscovery(clients, clk, opts),
	}
}

// Name is "aws".
func (p *CloudProvider) Name() string { return "aws" }

// UnavailableOfferings is the cache the launch path marks.
func (p *CloudProvider) UnavailableOfferings() *cloudprovider.UnavailableOfferings {
	return p.unavailable
}

// Prices are the provider's price data (refreshed by the pricing runnable).
func (p *CloudProvider) Prices() *Prices { return p.prices }

// Clients are the provider's SDK clients.
func (p *CloudProvider) Clients() *Clients { return p.clients }

// ClusterName is the cluster the provider tags resources for.
func (p *CloudProvider) ClusterName() string { return p.opts.ClusterName }

// GetInstanceTypes returns what the pool's EC2NodeClass can launch. A NodeClass that is missing
// or not Ready yet offers nothing (its status says why).
func (p *CloudProvider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*catalog.InstanceType, error) {
	nc := &awsv1.EC2NodeClass{}
	if ready, err := cloudprovider.GetReadyPoolNodeClass(ctx, p.kube, nodeClassKind, np, nc, awsv1.ConditionTypeReady); !ready {
		return nil, err
	}
	return p.instanceTypes(ctx, nc)
}

var nodeClassKind = cloudprovider.NodeClassKind{Group: awsv1.GroupVersion.Group, Kind: "EC2NodeClass"}

// nodeClass returns the claim's Ready EC2NodeClass.
func (p *CloudProvider) nodeClass(ctx context.Context, claim *v1.NodeClaim) (*awsv1.EC2NodeClass, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := cloudprovider.GetClaimNodeClass(ctx, p.kube, nodeClassKind, claim, nc); err != nil {
		return nil, err
	}
	return nc, nil
}
