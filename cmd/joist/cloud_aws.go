package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	"github.com/joist-dev/joist/cloudprovider"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/interruption"
	"github.com/joist-dev/joist/cloudprovider/aws/tagging"
	"github.com/joist-dev/joist/controllers/ec2nodeclass"
)

// awsFlags configure the aws provider.
type awsFlags struct {
	region, endpoint, queue                              string
	clusterName, clusterEndpoint, clusterCA, clusterCIDR string
	kubernetesVersion                                    string
	vmMemoryOverhead                                     float64
	reservedENIs                                         int
	disablePricing                                       bool
}

// The aws provider's flags and the variables they default to. The variables are Karpenter's names
// where Karpenter has the setting (ISOLATED_VPC, like Karpenter's, turns the Pricing API off), so
// the settings of an existing Karpenter install carry over.
const (
	clusterNameF, clusterNameE         = "aws-cluster-name", "CLUSTER_NAME"
	clusterEndpointF, clusterEndpointE = "aws-cluster-endpoint", "CLUSTER_ENDPOINT"
	clusterCAF, clusterCAE             = "aws-cluster-ca-bundle", "CLUSTER_CA_BUNDLE"
	clusterCIDRF, clusterCIDRE         = "aws-cluster-cidr", "CLUSTER_CIDR"
	k8sVersionF, k8sVersionE           = "aws-kubernetes-version", "KUBERNETES_VERSION"
	vmOverheadF, vmOverheadE           = "aws-vm-memory-overhead-percent", "VM_MEMORY_OVERHEAD_PERCENT"
	reservedENIsF, reservedENIsE       = "aws-reserved-enis", "RESERVED_ENIS"
)

func (a *awsFlags) bind(fs *flag.FlagSet, env *envFlags) {
	env.String(&a.region, "aws-region", "AWS_REGION", "", "AWS region of the cluster.")
	fs.StringVar(&a.endpoint, "aws-endpoint", "", "Override every AWS API endpoint (testing; VPC endpoints are picked up by the SDK without it).")
	env.String(&a.queue, "aws-interruption-queue", "INTERRUPTION_QUEUE", "", "SQS queue EventBridge sends spot interruption, rebalance, state-change and health events to; empty disables interruption handling.")
	env.String(&a.clusterName, clusterNameF, clusterNameE, "", "EKS cluster name (required with aws): tags every resource, goes into the nodes' bootstrap and is looked up with eks:DescribeCluster.")
	env.String(&a.clusterEndpoint, clusterEndpointF, clusterEndpointE, "", "EKS API server endpoint the nodes join (default: eks:DescribeCluster's), e.g. https://ABCDEF.gr7.us-west-2.eks.amazonaws.com.")
	env.String(&a.clusterCA, clusterCAF, clusterCAE, "", "Base64 cluster CA bundle for the nodes (default: eks:DescribeCluster's).")
	env.String(&a.clusterCIDR, clusterCIDRF, clusterCIDRE, "", "Service CIDR, IPv4 or IPv6 (default: eks:DescribeCluster's); AL2023's nodeadm requires it.")
	env.String(&a.kubernetesVersion, k8sVersionF, k8sVersionE, "", "Kubernetes minor version for alias AMIs, e.g. 1.33 (default: eks:DescribeCluster's).")
	env.Float64(&a.vmMemoryOverhead, vmOverheadF, vmOverheadE, 0.075, "Fraction of instance memory the hypervisor keeps, in [0, 1).")
	env.Int(&a.reservedENIs, reservedENIsF, reservedENIsE, 0, "ENIs left out of max pods (VPC CNI custom networking).")
	env.Bool(&a.disablePricing, "aws-disable-pricing", "ISOLATED_VPC", false, "Do not call the Pricing API (it has no VPC endpoint); use the on-demand prices compiled into the binary.")
}

// validate checks the aws settings; provider says what selected aws, so that an install that meant
// to run kwok learns how.
func (a *awsFlags) validate(env *envFlags, provider string) error {
	if a.clusterName == "" {
		return fmt.Errorf("the aws cloud provider (selected by %s) needs the EKS cluster's name: set $%s (--%s). "+
			"Set the variables in the manager's environment (OLM: the Subscription's spec.config.env; kustomize: a patch on config/default's "+
			"joist-controller-manager Deployment, see docs/aws.md) or pass the flags. For simulated nodes install config/kwok instead (%s=%s)",
			provider, clusterNameE, clusterNameF, cloudProviderE, providerKWOK)
	}
	if u, err := url.Parse(a.clusterEndpoint); a.clusterEndpoint != "" && (err != nil || u.Scheme != "https" || u.Host == "") {
		return fmt.Errorf("cluster endpoint from %s is not an https:// URL: set $%s or --%s to the API server URL, e.g. https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
			env.source(clusterEndpointF), clusterEndpointE, clusterEndpointF)
	}
	if a.clusterCA != "" {
		if _, err := base64.StdEncoding.DecodeString(a.clusterCA); err != nil {
			return fmt.Errorf("cluster CA bundle from %s is not base64 (%w): set $%s or --%s to the base64 PEM bundle (`aws eks describe-cluster --query cluster.certificateAuthority.data`), or unset both to use eks:DescribeCluster's",
				sourceName(env, clusterCAF), err, clusterCAE, clusterCAF)
		}
	}
	if a.clusterCIDR != "" {
		if _, err := netip.ParsePrefix(a.clusterCIDR); err != nil {
			return fmt.Errorf("service CIDR from %s is not a CIDR (%w): set $%s or --%s to e.g. 10.100.0.0/16, or unset both",
				env.source(clusterCIDRF), err, clusterCIDRE, clusterCIDRF)
		}
	}
	if a.vmMemoryOverhead < 0 || a.vmMemoryOverhead >= 1 {
		return fmt.Errorf("VM memory overhead from %s must be a fraction in [0, 1): set $%s or --%s to e.g. 0.075",
			env.source(vmOverheadF), vmOverheadE, vmOverheadF)
	}
	if a.reservedENIs < 0 {
		return fmt.Errorf("reserved ENIs from %s must be ≥ 0: set $%s or --%s to 0 or more",
			env.source(reservedENIsF), reservedENIsE, reservedENIsF)
	}
	return nil
}

// sourceName is where a flag's value came from, without the value (a CA bundle is kilobytes long).
func sourceName(env *envFlags, name string) string {
	if env.given(name) {
		return "--" + name
	}
	return "$" + env.envOf[name]
}

const serviceAccountCA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

func (a *awsFlags) build(kube client.Client, unavailable *cloudprovider.UnavailableOfferings) (cloudprovider.CloudProvider, error) {
	if err := awsv1.AddToScheme(kube.Scheme()); err != nil {
		return nil, fmt.Errorf("registering karpenter.k8s.aws/v1: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients, err := awsprovider.NewClients(ctx, awsprovider.ClientOptions{Region: a.region, Endpoint: a.endpoint, DisablePricing: a.disablePricing})
	if err != nil {
		return nil, err
	}
	ca := a.clusterCA
	if ca == "" {
		// As Karpenter: the CA the manager's own client trusts (in a pod, the service account's)
		// is the one nodes bootstrap with and the one the EC2NodeClass hash covers; outside a
		// cluster, eks:DescribeCluster's answer is used for user data.
		if data, err := os.ReadFile(serviceAccountCA); err == nil {
			ca = base64.StdEncoding.EncodeToString(data)
		}
	}
	p := awsprovider.New(kube, clients, unavailable, clock.RealClock{}, awsprovider.Options{
		ClusterName: a.clusterName, ClusterEndpoint: a.clusterEndpoint, ClusterCABundle: ca, ClusterCIDR: a.clusterCIDR,
		KubernetesVersion: a.kubernetesVersion, VMMemoryOverheadPercent: a.vmMemoryOverhead, ReservedENIs: a.reservedENIs,
	})
	// Start-up check: the cluster's coordinates come from eks:DescribeCluster (or the overrides);
	// a denied call is reported here, naming the permission, instead of at the first launch.
	if _, err := p.Cluster().Get(ctx); err != nil {
		return nil, err
	}
	return &awsCloud{CloudProvider: p, queue: a.queue, caBundle: ca}, nil
}

// awsCloud is the aws provider with the controllers it brings: the EC2NodeClass controller, the
// instance tagging controller, the interruption poller (when a queue is configured) and the price
// refresher.
type awsCloud struct {
	*awsprovider.CloudProvider
	queue string
	// caBundle goes into the EC2NodeClass hash, as Karpenter's.
	caBundle string
}

// RegisterControllers adds the provider's controllers to mgr.
func (a *awsCloud) RegisterControllers(_ context.Context, mgr manager.Manager) error {
	clients := a.Clients()
	a.UseEventRecorder(mgr.GetEventRecorder("joist"))
	opts := ec2nodeclass.Options{KubernetesVersion: a.Cluster().KubernetesVersion, ClusterName: a.ClusterName(), Region: clients.Region, ClusterCABundle: a.caBundle}
	if err := ec2nodeclass.New(mgr.GetClient(), clients.EC2, clients.SSM, clients.IAM, opts).Register(mgr); err != nil {
		return fmt.Errorf("registering ec2nodeclass controller: %w", err)
	}
	if err := tagging.New(mgr.GetClient(), clients.EC2).Register(mgr); err != nil {
		return fmt.Errorf("registering instance tagging controller: %w", err)
	}
	if a.queue != "" {
		poller := interruption.New(mgr.GetClient(), clients.SQS, a.UnavailableOfferings(), mgr.GetEventRecorder("joist"), interruption.Options{Queue: a.queue})
		if err := mgr.Add(poller); err != nil {
			return fmt.Errorf("adding interruption controller: %w", err)
		}
	}
	return mgr.Add(manager.RunnableFunc(a.Prices().Refresher(12*time.Hour, 15*time.Minute)))
}
