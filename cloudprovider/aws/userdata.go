package aws

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// bootstrap is what a node needs to join: cluster coordinates and its kubelet settings.
type bootstrap struct {
	clusterName, endpoint, caBundle, cidr string
	labels                                map[string]string
	taints                                []corev1.Taint
	maxPods                               int64
	kubelet                               *awsv1.KubeletConfiguration
	custom                                string
}

// userData renders the AMI family's bootstrap, with the NodeClass's userData merged: AL2023 as a
// MIME multi-part with a nodeadm NodeConfig after the user's parts, AL2 as a bootstrap.sh call
// after the user's script, Bottlerocket as TOML settings, Custom as the user's data unchanged.
func (b bootstrap) userData(family string) (string, error) {
	var out string
	switch family {
	case awsv1.AMIFamilyAL2023:
		out = b.al2023()
	case awsv1.AMIFamilyAL2:
		out = b.al2()
	case awsv1.AMIFamilyBottlerocket:
		out = b.bottlerocket()
	case awsv1.AMIFamilyCustom:
		out = b.custom
	default:
		return "", fmt.Errorf("amiFamily %s is not supported by Joist yet: use AL2023, AL2, Bottlerocket or Custom", family)
	}
	return base64.StdEncoding.EncodeToString([]byte(out)), nil
}

func (b bootstrap) labelFlag() string {
	keys := make([]string, 0, len(b.labels))
	for k := range b.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + b.labels[k]
	}
	return strings.Join(parts, ",")
}

func (b bootstrap) taintFlag() string {
	parts := make([]string, len(b.taints))
	for i, t := range b.taints {
		parts[i] = t.ToString()
	}
	return strings.Join(parts, ",")
}

const mimeBoundary = "//JOIST"

func (b bootstrap) al2023() string {
	var s strings.Builder
	s.WriteString("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + mimeBoundary + "\"\n\n")
	if b.custom != "" {
		s.WriteString("--" + mimeBoundary + "\n")
		if !strings.HasPrefix(b.custom, "Content-Type") {
			s.WriteString("Content-Type: text/x-shellscript; charset=\"us-ascii\"\n\n")
		}
		s.WriteString(b.custom + "\n")
	}
	s.WriteString("--" + mimeBoundary + "\nContent-Type: application/node.eks.aws\n\n")
	s.WriteString("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n")
	fmt.Fprintf(&s, "    name: %s\n    apiServerEndpoint: %s\n    certificateAuthority: %s\n", b.clusterName, b.endpoint, b.caBundle)
	if b.cidr != "" {
		fmt.Fprintf(&s, "    cidr: %s\n", b.cidr)
	}
	s.WriteString("  kubelet:\n    config:\n")
	if b.maxPods > 0 { // otherwise nodeadm computes the ENI-based value for the instance type
		fmt.Fprintf(&s, "      maxPods: %d\n", b.maxPods)
	}
	if k := b.kubelet; k != nil {
		if len(k.ClusterDNS) > 0 {
			fmt.Fprintf(&s, "      clusterDNS: [%s]\n", strings.Join(k.ClusterDNS, ", "))
		}
		writeMap(&s, "systemReserved", k.SystemReserved)
		writeMap(&s, "kubeReserved", k.KubeReserved)
		writeMap(&s, "evictionHard", k.EvictionHard)
		writeMap(&s, "evictionSoft", k.EvictionSoft)
	}
	s.WriteString("    flags:\n")
	fmt.Fprintf(&s, "    - --node-labels=%q\n", b.labelFlag())
	if len(b.taints) > 0 {
		fmt.Fprintf(&s, "    - --register-with-taints=%q\n", b.taintFlag())
	}
	s.WriteString("--" + mimeBoundary + "--\n")
	return s.String()
}

func writeMap(s *strings.Builder, name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(s, "      %s:\n", name)
	for _, k := range keys {
		fmt.Fprintf(s, "        %s: %q\n", k, m[k])
	}
}

func (b bootstrap) al2() string {
	var s strings.Builder
	s.WriteString("#!/bin/bash -xe\n")
	if b.custom != "" {
		s.WriteString(b.custom + "\n")
	}
	args, maxPods := "--node-labels="+b.labelFlag(), ""
	if b.maxPods > 0 {
		args += fmt.Sprintf(" --max-pods=%d", b.maxPods)
		maxPods = " --use-max-pods false"
	}
	if len(b.taints) > 0 {
		args += " --register-with-taints=" + b.taintFlag()
	}
	fmt.Fprintf(&s, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' --b64-cluster-ca '%s'%s --kubelet-extra-args '%s'\n",
		b.clusterName, b.endpoint, b.caBundle, maxPods, args)
	return s.String()
}

func (b bootstrap) bottlerocket() string {
	var s strings.Builder
	if b.custom != "" {
		s.WriteString(b.custom + "\n")
	}
	fmt.Fprintf(&s, "[settings.kubernetes]\ncluster-name = %q\napi-server = %q\ncluster-certificate = %q\n", b.clusterName, b.endpoint, b.caBundle)
	if b.maxPods > 0 {
		fmt.Fprintf(&s, "max-pods = %d\n", b.maxPods)
	}
	s.WriteString("[settings.kubernetes.node-labels]\n")
	keys := make([]string, 0, len(b.labels))
	for k := range b.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&s, "%q = %q\n", k, b.labels[k])
	}
	if len(b.taints) > 0 {
		s.WriteString("[settings.kubernetes.node-taints]\n")
		for _, t := range b.taints {
			fmt.Fprintf(&s, "%q = [%q]\n", t.Key, t.Value+":"+string(t.Effect))
		}
	}
	return s.String()
}

// bootstrapFor collects what the claim's node registers with: the NodePool's template labels and
// taints (the karpenter.sh/unregistered taint first: Joist lifts it when it releases the node).
func (p *CloudProvider) bootstrapFor(nc *awsv1.EC2NodeClass, claim *v1.NodeClaim, capacityType string) bootstrap {
	labels := map[string]string{v1.CapacityTypeLabelKey: capacityType, awsv1.LabelNodeClass: nc.Name}
	if np := claim.Labels[v1.NodePoolLabelKey]; np != "" {
		labels[v1.NodePoolLabelKey] = np
	}
	taints := []corev1.Taint{v1.UnregisteredNoExecuteTaint}
	taints = append(append(taints, claim.Spec.Taints...), claim.Spec.StartupTaints...)
	var maxPods int64
	if nc.Spec.Kubelet != nil && nc.Spec.Kubelet.MaxPods != nil {
		maxPods = int64(*nc.Spec.Kubelet.MaxPods)
	}
	custom := ""
	if nc.Spec.UserData != nil {
		custom = *nc.Spec.UserData
	}
	return bootstrap{
		clusterName: p.opts.ClusterName, endpoint: p.opts.ClusterEndpoint, caBundle: p.opts.ClusterCABundle, cidr: p.opts.ClusterCIDR,
		labels: labels, taints: taints, maxPods: maxPods, kubelet: nc.Spec.Kubelet, custom: custom,
	}
}
