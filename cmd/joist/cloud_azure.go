package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	"github.com/joist-dev/joist/cloudprovider"
	azureprovider "github.com/joist-dev/joist/cloudprovider/azure"
	"github.com/joist-dev/joist/controllers/aksnodeclass"
)

const providerAzure = "azure"

// azureFlags configure the azure provider. The variables are the AKS Karpenter provider's names,
// so the settings of an existing self-hosted install carry over.
type azureFlags struct {
	subscription, location, resourceGroup, subnetID       string
	clusterName, clusterEndpoint, clusterCA, bootstrapTok string
	sshKey, dnsIP, networkPlugin, networkPluginMode       string
	endpoint                                              string
}

func (a *azureFlags) bind(fs *flag.FlagSet, env *envFlags) {
	env.String(&a.subscription, "azure-subscription-id", "ARM_SUBSCRIPTION_ID", "", "Subscription of the cluster's node resource group (azure).")
	env.String(&a.location, "azure-location", "LOCATION", "", "Region of the cluster, e.g. eastus (azure).")
	env.String(&a.resourceGroup, "azure-node-resource-group", "AZURE_NODE_RESOURCE_GROUP", "", "Node resource group (MC_…) VMs and NICs are created in (azure).")
	env.String(&a.subnetID, "azure-vnet-subnet-id", "VNET_SUBNET_ID", "", "Default subnet resource ID of node NICs (azure); an AKSNodeClass's vnetSubnetID overrides it.")
	env.String(&a.clusterName, "azure-cluster-name", "CLUSTER_NAME", "", "AKS cluster name; tags every resource (azure).")
	env.String(&a.clusterEndpoint, "azure-cluster-endpoint", "CLUSTER_ENDPOINT", "", "API server URL nodes join (azure), e.g. https://<fqdn>:443.")
	env.String(&a.clusterCA, "azure-cluster-ca-bundle", "CLUSTER_CA_BUNDLE", "", "Base64 cluster CA bundle (default: the in-cluster service account's ca.crt).")
	env.String(&a.bootstrapTok, "azure-kubelet-bootstrap-token", "KUBELET_BOOTSTRAP_TOKEN", "", "TLS bootstrap token nodes join with (azure).")
	env.String(&a.sshKey, "azure-ssh-public-key", "SSH_PUBLIC_KEY", "", "SSH public key of the nodes' admin user (azure).")
	env.String(&a.dnsIP, "azure-dns-service-ip", "DNS_SERVICE_IP", "", "kube-dns service IP for the kubelet (azure).")
	env.String(&a.networkPlugin, "azure-network-plugin", "NETWORK_PLUGIN", "azure", "Cluster network plugin: azure, kubenet or none (azure).")
	env.String(&a.networkPluginMode, "azure-network-plugin-mode", "NETWORK_PLUGIN_MODE", "overlay", "Network plugin mode: overlay or empty (azure).")
	fs.StringVar(&a.endpoint, "azure-endpoint", "", "Override the Resource Manager endpoint (testing).")
}

func (a *azureFlags) validate(env *envFlags, provider string) error {
	var missing []string
	for _, r := range []struct{ v, env, flag string }{
		{a.subscription, "ARM_SUBSCRIPTION_ID", "azure-subscription-id"}, {a.location, "LOCATION", "azure-location"},
		{a.resourceGroup, "AZURE_NODE_RESOURCE_GROUP", "azure-node-resource-group"}, {a.subnetID, "VNET_SUBNET_ID", "azure-vnet-subnet-id"},
		{a.clusterName, "CLUSTER_NAME", "azure-cluster-name"}, {a.clusterEndpoint, "CLUSTER_ENDPOINT", "azure-cluster-endpoint"},
		{a.bootstrapTok, "KUBELET_BOOTSTRAP_TOKEN", "azure-kubelet-bootstrap-token"}, {a.sshKey, "SSH_PUBLIC_KEY", "azure-ssh-public-key"},
	} {
		if r.v == "" {
			missing = append(missing, "$"+r.env+" (--"+r.flag+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the azure cloud provider (selected by %s) is missing %s; see docs/azure.md. For simulated nodes select %s=%s",
			provider, strings.Join(missing, ", "), cloudProviderE, providerKWOK)
	}
	if u, err := url.Parse(a.clusterEndpoint); err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("cluster endpoint from %s is not an https:// URL: set $CLUSTER_ENDPOINT to the API server URL (`az aks show --query fqdn`)", env.source("azure-cluster-endpoint"))
	}
	return nil
}

// build builds the provider; vmMemoryOverhead is $VM_MEMORY_OVERHEAD_PERCENT, bound (and checked)
// once by the aws flags because both providers read the same variable.
func (a *azureFlags) build(kube client.Client, unavailable *cloudprovider.UnavailableOfferings, vmMemoryOverhead float64) (cloudprovider.CloudProvider, error) {
	ca := a.clusterCA
	if ca == "" {
		data, err := os.ReadFile(serviceAccountCA)
		if err != nil {
			return nil, fmt.Errorf("no cluster CA bundle ($CLUSTER_CA_BUNDLE) and no in-cluster CA to default it from: %w", err)
		}
		ca = base64.StdEncoding.EncodeToString(data)
	}
	if err := azv1beta1.AddToScheme(kube.Scheme()); err != nil {
		return nil, fmt.Errorf("registering karpenter.azure.com/v1beta1: %w", err)
	}
	clients, err := azureprovider.NewClients(azureprovider.ClientOptions{SubscriptionID: a.subscription, Endpoint: a.endpoint})
	if err != nil {
		return nil, err
	}
	p := azureprovider.New(kube, clients, unavailable, clock.RealClock{}, azureprovider.Options{
		ClusterName: a.clusterName, Location: a.location, ResourceGroup: a.resourceGroup, SubnetID: a.subnetID,
		NetworkPlugin: a.networkPlugin, NetworkPluginMode: a.networkPluginMode, ClusterEndpoint: a.clusterEndpoint,
		ClusterCABundle: ca, KubeletBootstrapToken: a.bootstrapTok, ClusterDNS: a.dnsIP, SSHPublicKey: a.sshKey,
		VMMemoryOverheadPercent: vmMemoryOverhead,
	})
	return &azureCloud{CloudProvider: p}, nil
}

// azureCloud is the azure provider with the controllers it brings: the AKSNodeClass controller,
// the price refresher and the orphan-NIC collector.
type azureCloud struct {
	*azureprovider.CloudProvider
}

// RegisterControllers adds the provider's controllers to mgr.
func (a *azureCloud) RegisterControllers(_ context.Context, mgr manager.Manager) error {
	c, opts := a.Clients(), a.Options()
	ctrl := aksnodeclass.New(mgr.GetClient(), c.Images, c.Subnets, aksnodeclass.Options{
		Location: opts.Location, DefaultSubnetID: opts.SubnetID, KubernetesVersion: kubernetesVersion(mgr.GetConfig()),
	})
	if err := ctrl.Register(mgr); err != nil {
		return fmt.Errorf("registering aksnodeclass controller: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(a.NICCollector(5 * time.Minute))); err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(a.Prices().Refresher(12*time.Hour, 15*time.Minute)))
}

// kubernetesVersion asks the API server for its minor version ("1.33"); an answer is kept for
// ten minutes, an error not at all (the next reconcile asks again).
func kubernetesVersion(cfg *rest.Config) func(context.Context) (string, error) {
	var mu sync.Mutex
	var version string
	var asked time.Time
	return func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if version != "" && time.Since(asked) < 10*time.Minute {
			return version, nil
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return "", fmt.Errorf("asking the API server for its version: %w", err)
		}
		info, err := dc.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("asking the API server for its version: %w", err)
		}
		version, asked = info.Major+"."+strings.TrimSuffix(info.Minor, "+"), time.Now()
		return version, nil
	}
}
