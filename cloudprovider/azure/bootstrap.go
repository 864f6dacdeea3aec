package azure

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	azuredata "github.com/joist-dev/joist/catalog/azure"
	"github.com/joist-dev/joist/cloudprovider"
)

// Paths the AKS node image's kubelet unit reads.
const (
	bootstrapKubeconfigPath = "/var/lib/kubelet/bootstrap-kubeconfig"
	caPath                  = "/etc/kubernetes/certs/ca.crt"
	kubeletDefaultsPath     = "/etc/default/kubelet"
)

type cloudConfig struct {
	WriteFiles []cloudFile `json:"write_files"`
	RunCmd     [][]string  `json:"runcmd"`
}

type cloudFile struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions"`
	Encoding    string `json:"encoding,omitempty"`
	Content     string `json:"content"`
}

// customData is the cloud-init the VM boots with: the cluster CA, a bootstrap kubeconfig with the
// TLS bootstrap token, and the kubelet's flags and node labels in /etc/default/kubelet (the AKS
// image's kubelet unit reads KUBELET_FLAGS and KUBELET_NODE_LABELS from it), then the kubelet is
// started.
func (p *CloudProvider) customData(nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim, l cloudprovider.Launchable) ([]byte, error) {
	ca, err := base64.StdEncoding.DecodeString(p.opts.ClusterCABundle)
	if err != nil {
		return nil, fmt.Errorf("cluster CA bundle is not base64: %w", err)
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["cluster"] = &clientcmdapi.Cluster{Server: p.opts.ClusterEndpoint, CertificateAuthority: caPath}
	kubeconfig.AuthInfos["kubelet-bootstrap"] = &clientcmdapi.AuthInfo{Token: p.opts.KubeletBootstrapToken}
	kubeconfig.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "kubelet-bootstrap"}
	kubeconfig.CurrentContext = "bootstrap"
	kc, err := clientcmd.Write(*kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("writing bootstrap kubeconfig: %w", err)
	}
	defaults := "KUBELET_FLAGS=" + strings.Join(p.kubeletFlags(nc, claim, l), " ") + "\n" +
		"KUBELET_NODE_LABELS=" + p.nodeLabels(nc, claim, l) + "\n"
	cfg := cloudConfig{
		WriteFiles: []cloudFile{
			{Path: caPath, Permissions: "0644", Content: string(ca)},
			{Path: bootstrapKubeconfigPath, Permissions: "0600", Content: string(kc)},
			{Path: kubeletDefaultsPath, Permissions: "0644", Content: defaults},
		},
		RunCmd: [][]string{{"systemctl", "daemon-reload"}, {"systemctl", "enable", "--now", "kubelet"}},
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return append([]byte("#cloud-config\n"), out...), nil
}

// kubeletFlags are the AKS node's kubelet settings (authentication by webhook and the cluster CA,
// no read-only port, certificate rotation, cluster domain and DNS, allocatable enforced on pods),
// AKS's reservations for the size (so the node's allocatable is what Joist planned with), max
// pods, the provider ID, the registration taints, then the class's kubelet settings, which win.
// One flag per name, sorted.
func (p *CloudProvider) kubeletFlags(nc *azv1beta1.AKSNodeClass, claim *v1.NodeClaim, l cloudprovider.Launchable) []string {
	reserved := l.InstanceType.Overhead.DeepCopy()
	mem := reserved["memory"]
	mem.Sub(azuredata.EvictionMemoryAvailable)
	cpu := reserved["cpu"]
	pods := l.InstanceType.Capacity["pods"]
	dns := p.opts.ClusterDNS
	if dns == "" {
		dns = defaultClusterDNS
	}
	flags := map[string]string{
		"--bootstrap-kubeconfig":         bootstrapKubeconfigPath,
		"--kubeconfig":                   "/var/lib/kubelet/kubeconfig",
		"--cloud-provider":               "external",
		"--provider-id":                  ProviderID(p.vmID(ResourceName(claim.Name))),
		"--address":                      "0.0.0.0",
		"--anonymous-auth":               "false",
		"--authentication-token-webhook": "true",
		"--authorization-mode":           "Webhook",
		"--client-ca-file":               caPath,
		"--read-only-port":               "0",
		"--rotate-certificates":          "true",
		"--cgroups-per-qos":              "true",
		"--enforce-node-allocatable":     "pods",
		"--cluster-domain":               "cluster.local",
		"--cluster-dns":                  dns,
		"--max-pods":                     pods.String(),
		"--kube-reserved":                fmt.Sprintf("cpu=%dm,memory=%dMi", cpu.MilliValue(), mem.Value()/(1<<20)),
		"--eviction-hard":                "memory.available<" + azuredata.EvictionMemoryAvailable.String(),
		"--image-gc-high-threshold":      "85",
		"--image-gc-low-threshold":       "80",
		"--pod-max-pids":                 "-1",
		"--node-status-update-frequency": "10s",
	}
	if taints := registerTaints(claim); len(taints) > 0 {
		flags["--register-with-taints"] = strings.Join(taints, ",")
	}
	if k := nc.Spec.Kubelet; k != nil {
		set := func(name string, ok bool, value any) {
			if ok {
				flags["--"+name] = fmt.Sprint(value)
			}
		}
		set("cpu-manager-policy", k.CPUManagerPolicy != nil, deref(k.CPUManagerPolicy))
		set("cpu-cfs-quota", k.CPUCFSQuota != nil, k.CPUCFSQuota != nil && *k.CPUCFSQuota)
		set("cpu-cfs-quota-period", k.CPUCFSQuotaPeriod.Duration != 0, k.CPUCFSQuotaPeriod.Duration)
		set("image-gc-high-threshold", k.ImageGCHighThresholdPercent != nil, derefInt(k.ImageGCHighThresholdPercent))
		set("image-gc-low-threshold", k.ImageGCLowThresholdPercent != nil, derefInt(k.ImageGCLowThresholdPercent))
		set("topology-manager-policy", k.TopologyManagerPolicy != nil, deref(k.TopologyManagerPolicy))
		set("allowed-unsafe-sysctls", len(k.AllowedUnsafeSysctls) > 0, strings.Join(k.AllowedUnsafeSysctls, ","))
		set("container-log-max-size", k.ContainerLogMaxSize != nil, deref(k.ContainerLogMaxSize))
		set("container-log-max-files", k.ContainerLogMaxFiles != nil, derefInt(k.ContainerLogMaxFiles))
		set("pod-max-pids", k.PodPidsLimit != nil, derefInt64(k.PodPidsLimit))
		set("fail-swap-on", k.FailSwapOn != nil, k.FailSwapOn != nil && *k.FailSwapOn)
	}
	out := make([]string, 0, len(flags))
	for name, value := range flags {
		out = append(out, name+"="+value)
	}
	sort.Strings(out)
	return out
}

// defaultClusterDNS is kube-dns's service IP in AKS's default service CIDR (10.0.0.0/16).
const defaultClusterDNS = "10.0.0.10"

// registerTaints are the taints the kubelet registers the node with, as the AKS provider passes
// them: the claim's taints and startup taints, and karpenter.sh/unregistered:NoExecute unless one
// of them already is that taint (Joist lifts it once it has synced the node).
func registerTaints(claim *v1.NodeClaim) []string {
	var out []string
	unregistered := false
	for _, list := range [][]corev1.Taint{claim.Spec.Taints, claim.Spec.StartupTaints} {
		for i := range list {
			unregistered = unregistered || list[i].MatchTaint(&v1.UnregisteredNoExecuteTaint)
			out = append(out, list[i].ToString())
		}
	}
	if !unregistered {
		out = append(out, v1.UnregisteredNoExecuteTaint.ToString())
	}
	return out
}

// vmID is the resource ID of the named VM in the node resource group.
func (p *CloudProvider) vmID(name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s", p.clients.SubscriptionID, p.opts.ResourceGroup, name)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt64(i *int64) int64 {
	if i == nil {
		return 0
	}
	return *i
}

func derefInt(i *int32) int32 {
	if i == nil {
		return 0
	}
	return *i
}
