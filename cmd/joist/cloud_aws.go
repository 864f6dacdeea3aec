package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
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
	vmMemoryOverhead                                     float64
	reservedENIs                                         int
	disablePricing                                       bool
}

func (a *awsFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&a.region, "aws-region", os.Getenv("AWS_REGION"), "AWS region of the cluster (default $AWS_REGION).")
	fs.StringVar(&a.endpoint, "aws-endpoint", "", "Override every AWS API endpoint (testing; VPC endpoints are picked up by the SDK without it).")
	fs.StringVar(&a.queue, "aws-interruption-queue", os.Getenv("INTERRUPTION_QUEUE"), "SQS queue EventBridge sends spot interruption, rebalance, state-change and health events to; empty disables interruption handling.")
	fs.StringVar(&a.clusterName, "aws-cluster-name", os.Getenv("CLUSTER_NAME"), "EKS cluster name: tags every resource and goes into the nodes' bootstrap.")
	fs.StringVar(&a.clusterEndpoint, "aws-cluster-endpoint", os.Getenv("CLUSTER_ENDPOINT"), "EKS API server endpoint the nodes join.")
	fs.StringVar(&a.clusterCA, "aws-cluster-ca-bundle", "", "Base64 cluster CA bundle for the nodes (default: the in-cluster service account's ca.crt).")
	fs.StringVar(&a.clusterCIDR, "aws-cluster-cidr", "", "Service CIDR for AL2023 nodeadm (optional).")
	fs.Float64Var(&a.vmMemoryOverhead, "aws-vm-memory-overhead-percent", 0.075, "Fraction of instance memory the hypervisor keeps.")
	fs.IntVar(&a.reservedENIs, "aws-reserved-enis", 0, "ENIs left out of max pods (VPC CNI custom networking).")
	fs.BoolVar(&a.disablePricing, "aws-disable-pricing", false, "Do not call the Pricing API; use the on-demand prices compiled into the binary.")
}

const serviceAccountCA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

func (a *awsFlags) build(kube client.Client, unavailable *cloudprovider.UnavailableOfferings) (cloudprovider.CloudProvider, error) {
	if a.clusterName == "" || a.clusterEndpoint == "" {
		return nil, fmt.Errorf("--cloud-provider=aws needs --aws-cluster-name and --aws-cluster-endpoint (or $CLUSTER_NAME and $CLUSTER_ENDPOINT)")
	}
	if a.vmMemoryOverhead < 0 || a.vmMemoryOverhead >= 1 {
		return nil, fmt.Errorf("--aws-vm-memory-overhead-percent must be in [0, 1), got %v", a.vmMemoryOverhead)
	}
	ca := a.clusterCA
	if ca == "" {
		data, err := os.ReadFile(serviceAccountCA)
		if err != nil {
			return nil, fmt.Errorf("no --aws-cluster-ca-bundle and no in-cluster CA to default it from: %w", err)
		}
		ca = base64.StdEncoding.EncodeToString(data)
	}
	if err := awsv1.AddToScheme(kube.Scheme()); err != nil {
		return nil, fmt.Errorf("registering karpenter.k8s.aws/v1: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients, err := awsprovider.NewClients(ctx, awsprovider.ClientOptions{Region: a.region, Endpoint: a.endpoint, DisablePricing: a.disablePricing})
	if err != nil {
		return nil, err
	}
	p := awsprovider.New(kube, clients, unavailable, clock.RealClock{}, awsprovider.Options{
		ClusterName: a.clusterName, ClusterEndpoint: a.clusterEndpoint, ClusterCABundle: ca, ClusterCIDR: a.clusterCIDR,
		VMMemoryOverheadPercent: a.vmMemoryOverhead, ReservedENIs: a.reservedENIs,
	})
	return &awsCloud{CloudProvider: p, queue: a.queue}, nil
}

// awsCloud is the aws provider with the controllers it brings: the EC2NodeClass controller, the
// instance tagging controller, the interruption poller (when a queue is configured) and the price
// refresher.
type awsCloud struct {
	*awsprovider.CloudProvider
	queue string
}

// RegisterControllers adds the provider's controllers to mgr.
func (a *awsCloud) RegisterControllers(_ context.Context, mgr manager.Manager) error {
	clients := a.Clients()
	opts := ec2nodeclass.Options{KubernetesVersion: kubernetesVersion(mgr.GetConfig()), ClusterName: a.ClusterName(), Region: clients.Region}
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

// kubernetesVersion asks the API server once for its minor version ("1.33").
func kubernetesVersion(cfg *rest.Config) func(context.Context) (string, error) {
	var once sync.Once
	var version string
	var err error
	return func(context.Context) (string, error) {
		once.Do(func() {
			var dc *discovery.DiscoveryClient
			if dc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
				return
			}
			info, e := dc.ServerVersion()
			if e != nil {
				err = e
				return
			}
			version = info.Major + "." + strings.TrimSuffix(info.Minor, "+")
		})
		return version, err
	}
}
