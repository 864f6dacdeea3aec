package aws

import (
	"fmt"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

// bottlerocket is the user's TOML with the settings Joist owns set (Karpenter's documented
// precedence: its values win for the fields it manages, node labels are merged with Joist's
// winning, every other setting of the user is kept). Parsing and writing go through a TOML
// library, so a [settings.kubernetes] table of the user's is merged, never repeated.
func (b bootstrap) bottlerocket() (string, error) {
	if err := b.requireCluster(false); err != nil {
		return "", err
	}
	doc := map[string]any{}
	if err := toml.Unmarshal([]byte(b.custom), &doc); err != nil {
		return "", fmt.Errorf("userData is not valid Bottlerocket TOML: %w", err)
	}
	settings, err := table(doc, "settings")
	if err != nil {
		return "", err
	}
	k8s, err := table(settings, "kubernetes")
	if err != nil {
		return "", err
	}
	k8s["cluster-name"] = b.clusterName
	k8s["api-server"] = b.cluster.Endpoint
	k8s["cluster-certificate"] = b.cluster.CABundle
	labels, err := table(k8s, "node-labels")
	if err != nil {
		return "", err
	}
	for k, v := range b.labels {
		labels[k] = v
	}
	taints := map[string]any{}
	for _, t := range b.taints {
		list, _ := taints[t.Key].([]string)
		taints[t.Key] = append(list, t.Value+":"+string(t.Effect))
	}
	k8s["node-taints"] = taints
	b.bottlerocketKubelet(k8s)
	if b.instanceStorePolicy == "RAID0" {
		cmds, err := table(settings, "bootstrap-commands")
		if err != nil {
			return "", err
		}
		cmds["000-mount-instance-storage"] = map[string]any{
			"commands":  [][]string{{"apiclient", "ephemeral-storage", "init"}, {"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"}},
			"mode":      "always",
			"essential": true,
		}
	}
	out, err := toml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("encoding Bottlerocket settings: %w", err)
	}
	return string(out), nil
}

// bottlerocketKubelet sets the Bottlerocket settings of the EC2NodeClass's kubelet fields
// (podsPerCore has none: CEL refuses it with Bottlerocket).
func (b bootstrap) bottlerocketKubelet(k8s map[string]any) {
	k := b.kubelet
	if k == nil {
		return
	}
	switch len(k.ClusterDNS) {
	case 0:
	case 1:
		k8s["cluster-dns-ip"] = k.ClusterDNS[0]
	default:
		k8s["cluster-dns-ip"] = k.ClusterDNS
	}
	if k.MaxPods != nil {
		k8s["max-pods"] = int64(*k.MaxPods)
	}
	for name, m := range map[string]map[string]string{
		"system-reserved": k.SystemReserved, "kube-reserved": k.KubeReserved, "eviction-hard": k.EvictionHard, "eviction-soft": k.EvictionSoft,
	} {
		if len(m) > 0 {
			k8s[name] = m
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		grace := map[string]string{}
		for signal, d := range k.EvictionSoftGracePeriod {
			grace[signal] = d.Duration.String()
		}
		k8s["eviction-soft-grace-period"] = grace
	}
	if k.EvictionMaxPodGracePeriod != nil {
		k8s["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
	}
	if k.ImageGCHighThresholdPercent != nil {
		k8s["image-gc-high-threshold-percent"] = strconv.Itoa(int(*k.ImageGCHighThresholdPercent)) // a string in Bottlerocket's model
	}
	if k.ImageGCLowThresholdPercent != nil {
		k8s["image-gc-low-threshold-percent"] = strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		k8s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
}

// table returns doc[key] as a TOML table, creating it when absent.
func table(doc map[string]any, key string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		t := map[string]any{}
		doc[key] = t
		return t, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("userData: %s is a %T, not a TOML table", key, v)
	}
}
