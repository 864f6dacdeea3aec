package azure

import (
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"golang.org/x/mod/semver"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// Labels of AKS nodes that Joist sets but does not schedule on (the AKS provider's).
const (
	aksLabelRole                = "kubernetes.azure.com/role"
	aksLabelOSSKURequested      = "kubernetes.azure.com/os-sku-requested"
	aksLabelOSSKUEffective      = "kubernetes.azure.com/os-sku-effective"
	aksLabelLocalDNSState       = "kubernetes.azure.com/localdns-state"
	aksLabelSubnetName          = "kubernetes.azure.com/network-subnet"
	aksLabelAzureCNIOverlay     = "kubernetes.azure.com/azure-cni-overlay"
	aksLabelPodNetworkType      = "kubernetes.azure.com/podnetwork-type"
	aksLabelNetworkStatelessCNI = "kubernetes.azure.com/network-stateless-cni"
)

// nodeLabels are the labels the kubelet registers the node with (KUBELET_NODE_LABELS,
// comma-separated key=value, sorted): the AKS labels of every node, the launch's labels (size,
// zone, capacity type and its AKS priority), then the claim's, without the labels the kubelet may
// not set on its own Node in the kubernetes.io and k8s.io namespaces (it refuses to start with
// them; Joist puts those on the Node after registration, as Karpenter does).
func (p *CloudProvider) nodeLabels(nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim, l cloudprovider.Launchable) string {
	labels := p.aksLabels(nc)
	for k, v := range l.Labels() {
		labels[k] = v
	}
	priority := "regular"
	if l.Offering.CapacityType == v1.CapacityTypeSpot {
		priority = "spot"
	}
	labels[azv1beta1.AKSLabelScaleSetPriority] = priority
	labels[azv1beta1.AKSLabelPriority] = priority
	for k, v := range claim.Labels {
		labels[k] = v
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if kubeletMaySet(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, ",")
}

// kubeletMaySet reports whether the kubelet accepts the label in --node-labels: any label outside
// the kubernetes.io and k8s.io namespaces, and those the node restriction lets a kubelet set.
func kubeletMaySet(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	for _, k8s := range []string{"kubernetes.io", "k8s.io"} {
		if ns == k8s || strings.HasSuffix(ns, "."+k8s) {
			return kubeletapis.IsKubeletLabel(key)
		}
	}
	return true
}

// aksLabels are the kubernetes.azure.com labels the AKS provider gives every node: role agent,
// the node resource group as the cluster, user mode, the OS SKU requested and effective, local DNS
// state and, with Azure CNI Overlay, the subnet and pod network labels.
func (p *CloudProvider) aksLabels(nc *azv1beta1.AKSNodeClass) map[string]string {
	labels := map[string]string{
		aksLabelRole:              "agent",
		azv1beta1.AKSLabelCluster: clusterLabel(p.opts.ResourceGroup),
		azv1beta1.AKSLabelMode:    "user",
		azv1beta1.AKSLabelOSSKU:   nc.OSSKU(),
		aksLabelOSSKURequested:    nc.ImageFamily(),
		aksLabelOSSKUEffective:    effectiveOSSKU(nc.ImageFamily()),
		aksLabelLocalDNSState:     "disabled", // Joist resolves localDNS Preferred to Disabled and refuses Required
	}
	if p.opts.NetworkPlugin == "azure" && p.opts.NetworkPluginMode == "overlay" {
		if rid, err := arm.ParseResourceID(p.subnetID(nc)); err == nil {
			labels[aksLabelSubnetName] = rid.Name
		}
		labels[aksLabelAzureCNIOverlay] = "true"
		labels[aksLabelPodNetworkType] = "overlay"
		stateless := "false"
		if v := nc.Status.KubernetesVersion; v != nil && semver.Compare("v"+strings.TrimPrefix(*v, "v"), "v1.34") >= 0 {
			stateless = "true"
		}
		labels[aksLabelNetworkStatelessCNI] = stateless
	}
	return labels
}

// effectiveOSSKU is the node image family Joist resolves for the class's image family (Ubuntu →
// Ubuntu 22.04, AzureLinux → Azure Linux 3).
func effectiveOSSKU(family string) string {
	switch family {
	case azv1beta1.ImageFamilyUbuntu2404:
		return "Ubuntu2404"
	case azv1beta1.ImageFamilyAzureLinux:
		return "AzureLinux3"
	}
	return "Ubuntu2204"
}

// clusterLabel is the node resource group as a label value, as AKS writes kubernetes.azure.com/cluster:
// parentheses become '-', at most 63 characters, and a value ending in '-', '_' or '.' ends in 'z'.
func clusterLabel(resourceGroup string) string {
	s := strings.NewReplacer("(", "-", ")", "-").Replace(resourceGroup)
	if len(s) > 63 {
		s = s[:63]
	}
	if strings.HasSuffix(s, "-") || strings.HasSuffix(s, "_") || strings.HasSuffix(s, ".") {
		if len(s) == 63 {
			s = s[:62]
		}
		s += "z"
	}
	return s
}
