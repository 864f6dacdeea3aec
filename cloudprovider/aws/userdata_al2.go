package aws

import (
	"fmt"
	"sort"
	"strings"
)

// al2 is a MIME archive for cloud-init: the user's parts (a plain script becomes a shell part),
// then a shell part calling /etc/eks/bootstrap.sh with every kubelet setting as a kubelet flag.
// The user's MIME document is never prefixed with anything: cloud-init reads it as MIME.
func (b bootstrap) al2() (string, error) {
	if err := b.requireCluster(false); err != nil {
		return "", err
	}
	parts, err := customParts(b.custom, false)
	if err != nil {
		return "", err
	}
	return writeMIME(append(parts, mimePart{contentType: mediaShellScript, content: b.bootstrapScript()}))
}

func (b bootstrap) bootstrapScript() string {
	var s strings.Builder
	s.WriteString("#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	// bootstrap.sh takes its arguments without '='.
	fmt.Fprintf(&s, "/etc/eks/bootstrap.sh %s --apiserver-endpoint %s --b64-cluster-ca %s",
		shellQuote(b.clusterName), shellQuote(b.cluster.Endpoint), shellQuote(b.cluster.CABundle))
	if b.cluster.IPv6() {
		fmt.Fprintf(&s, " \\\n--ip-family ipv6 --service-ipv6-cidr %s", shellQuote(b.cluster.ServiceCIDR))
	}
	if dns := b.dnsAddress(); dns != "" {
		fmt.Fprintf(&s, " \\\n--dns-cluster-ip %s", shellQuote(dns))
	}
	if b.kubelet != nil && b.kubelet.MaxPods != nil {
		s.WriteString(" \\\n--use-max-pods false")
	}
	fmt.Fprintf(&s, " \\\n--kubelet-extra-args %s", shellQuote(strings.Join(b.kubeletFlags(), " ")))
	if b.instanceStorePolicy == "RAID0" {
		s.WriteString(" \\\n--local-disks raid0")
	}
	s.WriteString("\n")
	return s.String()
}

// dnsAddress: kubelet.clusterDNS (AL2 takes one address; CEL refuses more), else the address EKS's
// CoreDNS takes from the service CIDR (bootstrap.sh would otherwise guess from the VPC CIDR).
func (b bootstrap) dnsAddress() string {
	if b.kubelet != nil && len(b.kubelet.ClusterDNS) > 0 {
		return b.kubelet.ClusterDNS[0]
	}
	return b.cluster.DNSAddress()
}

// kubeletFlags are the kubelet's command-line flags for labels, taints and every kubelet setting
// of the EC2NodeClass but clusterDNS (given to bootstrap.sh).
func (b bootstrap) kubeletFlags() []string {
	flags := []string{"--node-labels=" + strings.Join(b.sortedLabels(), ",")}
	if len(b.taints) > 0 {
		flags = append(flags, "--register-with-taints="+strings.Join(b.taintStrings(), ","))
	}
	k := b.kubelet
	if k == nil {
		return flags
	}
	if k.MaxPods != nil {
		flags = append(flags, fmt.Sprintf("--max-pods=%d", *k.MaxPods))
	}
	if k.PodsPerCore != nil {
		flags = append(flags, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	flags = appendMapFlag(flags, "--system-reserved", k.SystemReserved, "=")
	flags = appendMapFlag(flags, "--kube-reserved", k.KubeReserved, "=")
	flags = appendMapFlag(flags, "--eviction-hard", k.EvictionHard, "<")
	flags = appendMapFlag(flags, "--eviction-soft", k.EvictionSoft, "<")
	grace := map[string]string{}
	for signal, d := range k.EvictionSoftGracePeriod {
		grace[signal] = d.Duration.String()
	}
	flags = appendMapFlag(flags, "--eviction-soft-grace-period", grace, "=")
	if k.EvictionMaxPodGracePeriod != nil {
		flags = append(flags, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		flags = append(flags, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		flags = append(flags, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		flags = append(flags, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return flags
}

// appendMapFlag appends name=k1<sep>v1,k2<sep>v2 with the keys sorted.
func appendMapFlag(flags []string, name string, m map[string]string, sep string) []string {
	if len(m) == 0 {
		return flags
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + sep + m[k]
	}
	return append(flags, name+"="+strings.Join(parts, ","))
}

// shellQuote quotes s for bash in single quotes.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
