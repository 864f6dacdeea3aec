package aws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// bootstrap is what a node needs to join: cluster coordinates and its kubelet settings.
type bootstrap struct {
	clusterName string
	cluster     ClusterInfo
	labels      map[string]string
	taints      []corev1.Taint
	kubelet     *awsv1.KubeletConfiguration
	// instanceStorePolicy is spec.instanceStorePolicy ("RAID0" or "").
	instanceStorePolicy string
	custom              string
}

// userData renders the AMI family's bootstrap, base64-encoded, with the NodeClass's userData merged
// the way Karpenter documents it: AL2023 and AL2 as a MIME multi-part archive with the user's parts
// first (AL2023: a NodeConfig part last; AL2: a bootstrap.sh script part last), Bottlerocket as the
// user's TOML with the settings Joist owns overwritten, Custom as the user's data unchanged.
func (b bootstrap) userData(family string) (string, error) {
	var out string
	var err error
	switch family {
	case awsv1.AMIFamilyAL2023:
		out, err = b.al2023()
	case awsv1.AMIFamilyAL2:
		out, err = b.al2()
	case awsv1.AMIFamilyBottlerocket:
		out, err = b.bottlerocket()
	case awsv1.AMIFamilyCustom:
		out = b.custom
	default:
		return "", fmt.Errorf("amiFamily %s is not supported by Joist yet: use AL2023, AL2, Bottlerocket or Custom", family)
	}
	if err != nil {
		return "", fmt.Errorf("rendering %s user data: %w", family, err)
	}
	return base64.StdEncoding.EncodeToString([]byte(out)), nil
}

// requireCluster checks what every family's node agent refuses to start without.
func (b bootstrap) requireCluster(needCIDR bool) error {
	var missing []string
	if b.clusterName == "" {
		missing = append(missing, "name ($CLUSTER_NAME)")
	}
	if b.cluster.Endpoint == "" {
		missing = append(missing, "endpoint ($CLUSTER_ENDPOINT)")
	}
	if b.cluster.CABundle == "" {
		missing = append(missing, "CA bundle ($CLUSTER_CA_BUNDLE)")
	}
	if needCIDR && b.cluster.ServiceCIDR == "" {
		missing = append(missing, "service CIDR ($CLUSTER_CIDR)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the cluster's %s is unknown: allow eks:DescribeCluster or set it", strings.Join(missing, ", "))
	}
	return nil
}

func (b bootstrap) sortedLabels() []string {
	keys := make([]string, 0, len(b.labels))
	for k := range b.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + b.labels[k]
	}
	return parts
}

func (b bootstrap) taintStrings() []string {
	parts := make([]string, len(b.taints))
	for i, t := range b.taints {
		parts[i] = t.ToString()
	}
	return parts
}

// kubeletConfigFields are the EC2NodeClass's kubelet settings as KubeletConfiguration
// (kubelet.config.k8s.io/v1beta1) fields: the CRD's field names are the kubelet's own.
func kubeletConfigFields(k *awsv1.KubeletConfiguration) (map[string]any, error) {
	out := map[string]any{}
	if k == nil {
		return out, nil
	}
	data, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encoding kubelet settings: %w", err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding kubelet settings: %w", err)
	}
	return out, nil
}

// bootstrapFor collects what the claim's node registers with: the cluster's coordinates, the
// NodePool's template labels and taints (the karpenter.sh/unregistered taint first: Joist lifts it
// when it releases the node) and the NodeClass's kubelet settings and userData.
func (p *CloudProvider) bootstrapFor(ctx context.Context, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, capacityType string) (bootstrap, error) {
	info, err := p.cluster.Get(ctx)
	if err != nil && nc.AMIFamily() != awsv1.AMIFamilyCustom {
		return bootstrap{}, err
	}
	return claimBootstrap(p.opts.ClusterName, info, nc, claim, capacityType), nil
}

// claimBootstrap is the bootstrap of the claim's node (launch and `joist aws render` alike).
func claimBootstrap(clusterName string, info ClusterInfo, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, capacityType string) bootstrap {
	labels := map[string]string{v1.CapacityTypeLabelKey: capacityType, awsv1.LabelNodeClass: nc.Name}
	if np := claim.Labels[v1.NodePoolLabelKey]; np != "" {
		labels[v1.NodePoolLabelKey] = np
	}
	taints := []corev1.Taint{v1.UnregisteredNoExecuteTaint}
	taints = append(append(taints, claim.Spec.Taints...), claim.Spec.StartupTaints...)
	return newBootstrap(clusterName, info, nc, labels, taints)
}

func newBootstrap(clusterName string, info ClusterInfo, nc *awsv1.EC2NodeClass, labels map[string]string, taints []corev1.Taint) bootstrap {
	b := bootstrap{clusterName: clusterName, cluster: info, labels: labels, taints: taints, kubelet: nc.Spec.Kubelet}
	if nc.Spec.UserData != nil {
		b.custom = *nc.Spec.UserData
	}
	if nc.Spec.InstanceStorePolicy != nil {
		b.instanceStorePolicy = *nc.Spec.InstanceStorePolicy
	}
	return b
}

// renderUserData is the base64 user data a node of the claim boots with.
func (p *CloudProvider) renderUserData(ctx context.Context, nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, capacityType string) (string, error) {
	b, err := p.bootstrapFor(ctx, nc, claim, capacityType)
	if err != nil {
		return "", err
	}
	return b.userData(nc.AMIFamily())
}
