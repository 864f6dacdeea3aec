package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is the subset of kubelet settings AKS lets a node pool set (AKS custom
// kubelet configuration), named as in the kubelet's own configuration.
type KubeletConfiguration struct {
	// CPUManagerPolicy is the kubelet CPU manager policy.
	// +kubebuilder:validation:Enum:={none,static}
	// +default="none"
	// +optional
	CPUManagerPolicy *string `json:"cpuManagerPolicy,omitempty"`
	// CPUCFSQuota enforces CPU limits with CFS quota.
	// +default=true
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
	// CPUCFSQuotaPeriod is cpu.cfs_period_us, between 1ms and 1s.
	// +default="100ms"
	// +optional
	CPUCFSQuotaPeriod metav1.Duration `json:"cpuCFSQuotaPeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage above which images are always collected.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage below which images are never collected.
	// +kubebuilder:validation:Minimum:=0
	// +kubebuilder:validation:Maximum:=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// TopologyManagerPolicy is the kubelet topology manager policy.
	// +kubebuilder:validation:Enum:={restricted,best-effort,none,single-numa-node}
	// +default="none"
	// +optional
	TopologyManagerPolicy *string `json:"topologyManagerPolicy,omitempty"`
	// AllowedUnsafeSysctls are unsafe sysctls (or patterns ending in *) pods may set.
	// +optional
	AllowedUnsafeSysctls []string `json:"allowedUnsafeSysctls,omitempty"`
	// ContainerLogMaxSize is the size at which a container log is rotated.
	// +kubebuilder:validation:Pattern=`^\d+(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)$`
	// +default="50Mi"
	// +optional
	ContainerLogMaxSize *string `json:"containerLogMaxSize,omitempty"`
	// ContainerLogMaxFiles is how many log files a container keeps.
	// +kubebuilder:validation:Minimum:=2
	// +default=5
	// +optional
	ContainerLogMaxFiles *int32 `json:"containerLogMaxFiles,omitempty"`
	// PodPidsLimit is the most PIDs a pod may use (-1: no limit).
	// +optional
	PodPidsLimit *int64 `json:"podPidsLimit,omitempty"`
	// FailSwapOn makes the kubelet refuse to start with swap on; false is needed for linuxOSConfig.swapFileSize.
	// +optional
	FailSwapOn *bool `json:"failSwapOn,omitempty"`
}

// TransparentHugePageDefrag is /sys/kernel/mm/transparent_hugepage/defrag.
// +kubebuilder:validation:Enum:={always,defer,"defer+madvise",madvise,never}
type TransparentHugePageDefrag string

// TransparentHugePageEnabled is /sys/kernel/mm/transparent_hugepage/enabled.
// +kubebuilder:validation:Enum:={always,madvise,never}
type TransparentHugePageEnabled string

// LinuxOSConfiguration are AKS's custom Linux OS settings, applied when a node is provisioned.
type LinuxOSConfiguration struct {
	// SwapFileSize is the size of a swap file created on the node, rounded to MB (e.g. 2Gi).
	// +kubebuilder:validation:Pattern=`^\d+(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)$`
	// +optional
	SwapFileSize *string `json:"swapFileSize,omitempty"`
	// Sysctls set on the node.
	// +optional
	Sysctls *SysctlConfiguration `json:"sysctls,omitempty"`
	// TransparentHugePageDefrag sets transparent_hugepage/defrag.
	// +optional
	TransparentHugePageDefrag *TransparentHugePageDefrag `json:"transparentHugePageDefrag,omitempty"`
	// TransparentHugePageEnabled sets transparent_hugepage/enabled.
	// +optional
	TransparentHugePageEnabled *TransparentHugePageEnabled `json:"transparentHugePageEnabled,omitempty"`
}

// SysctlConfiguration are the sysctls AKS lets a node pool set, each within AKS's bounds.
// +kubebuilder:validation:XValidation:message="netCoreRmemDefault must be <= netCoreRmemMax",rule="has(self.netCoreRmemDefault) && has(self.netCoreRmemMax) ? self.netCoreRmemDefault <= self.netCoreRmemMax : true"
// +kubebuilder:validation:XValidation:message="netCoreWmemDefault must be <= netCoreWmemMax",rule="has(self.netCoreWmemDefault) && has(self.netCoreWmemMax) ? self.netCoreWmemDefault <= self.netCoreWmemMax : true"
// +kubebuilder:validation:XValidation:message="netIPv4NeighDefaultGcThresh1 must be <= netIPv4NeighDefaultGcThresh2",rule="has(self.netIPv4NeighDefaultGcThresh1) && has(self.netIPv4NeighDefaultGcThresh2) ? self.netIPv4NeighDefaultGcThresh1 <= self.netIPv4NeighDefaultGcThresh2 : true"
// +kubebuilder:validation:XValidation:message="netIPv4NeighDefaultGcThresh2 must be <= netIPv4NeighDefaultGcThresh3",rule="has(self.netIPv4NeighDefaultGcThresh2) && has(self.netIPv4NeighDefaultGcThresh3) ? self.netIPv4NeighDefaultGcThresh2 <= self.netIPv4NeighDefaultGcThresh3 : true"
// +kubebuilder:validation:XValidation:message="netIPv4IPLocalPortRange first port must be in [1024, 60999]",rule="!has(self.netIPv4IPLocalPortRange) || (int(self.netIPv4IPLocalPortRange.split(' ')[0]) >= 1024 && int(self.netIPv4IPLocalPortRange.split(' ')[0]) <= 60999)"
// +kubebuilder:validation:XValidation:message="netIPv4IPLocalPortRange last port must be in [32768, 65535]",rule="!has(self.netIPv4IPLocalPortRange) || (int(self.netIPv4IPLocalPortRange.split(' ')[1]) >= 32768 && int(self.netIPv4IPLocalPortRange.split(' ')[1]) <= 65535)"
// +kubebuilder:validation:XValidation:message="netIPv4IPLocalPortRange first port must be <= last port",rule="!has(self.netIPv4IPLocalPortRange) || int(self.netIPv4IPLocalPortRange.split(' ')[0]) <= int(self.netIPv4IPLocalPortRange.split(' ')[1])"
type SysctlConfiguration struct {
	// FsAioMaxNr is fs.aio-max-nr.
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=6553500
	// +optional
	FsAioMaxNr *int32 `json:"fsAioMaxNr,omitempty"`
	// FsFileMax is fs.file-max.
	// +kubebuilder:validation:Minimum=8192
	// +kubebuilder:validation:Maximum=12000500
	// +optional
	FsFileMax *int32 `json:"fsFileMax,omitempty"`
	// FsInotifyMaxUserWatches is fs.inotify.max_user_watches.
	// +kubebuilder:validation:Minimum=781250
	// +kubebuilder:validation:Maximum=2097152
	// +optional
	FsInotifyMaxUserWatches *int32 `json:"fsInotifyMaxUserWatches,omitempty"`
	// FsNrOpen is fs.nr_open.
	// +kubebuilder:validation:Minimum=8192
	// +kubebuilder:validation:Maximum=20000500
	// +optional
	FsNrOpen *int32 `json:"fsNrOpen,omitempty"`
	// KernelThreadsMax is kernel.threads-max.
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=513785
	// +optional
	KernelThreadsMax *int32 `json:"kernelThreadsMax,omitempty"`
	// NetCoreNetdevMaxBacklog is net.core.netdev_max_backlog.
	// +kubebuilder:validation:Minimum=1000
	// +kubebuilder:validation:Maximum=3240000
	// +optional
	NetCoreNetdevMaxBacklog *int32 `json:"netCoreNetdevMaxBacklog,omitempty"`
	// NetCoreOptmemMax is net.core.optmem_max.
	// +kubebuilder:validation:Minimum=20480
	// +kubebuilder:validation:Maximum=4194304
	// +optional
	NetCoreOptmemMax *int32 `json:"netCoreOptmemMax,omitempty"`
	// NetCoreRmemDefault is net.core.rmem_default.
	// +kubebuilder:validation:Minimum=212992
	// +kubebuilder:validation:Maximum=134217728
	// +optional
	NetCoreRmemDefault *int32 `json:"netCoreRmemDefault,omitempty"`
	// NetCoreRmemMax is net.core.rmem_max.
	// +kubebuilder:validation:Minimum=212992
	// +kubebuilder:validation:Maximum=134217728
	// +optional
	NetCoreRmemMax *int32 `json:"netCoreRmemMax,omitempty"`
	// NetCoreSomaxconn is net.core.somaxconn.
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=3240000
	// +optional
	NetCoreSomaxconn *int32 `json:"netCoreSomaxconn,omitempty"`
	// NetCoreWmemDefault is net.core.wmem_default.
	// +kubebuilder:validation:Minimum=212992
	// +kubebuilder:validation:Maximum=134217728
	// +optional
	NetCoreWmemDefault *int32 `json:"netCoreWmemDefault,omitempty"`
	// NetCoreWmemMax is net.core.wmem_max.
	// +kubebuilder:validation:Minimum=212992
	// +kubebuilder:validation:Maximum=134217728
	// +optional
	NetCoreWmemMax *int32 `json:"netCoreWmemMax,omitempty"`
	// NetIPv4NeighDefaultGcThresh1 is net.ipv4.neigh.default.gc_thresh1.
	// +kubebuilder:validation:Minimum=128
	// +kubebuilder:validation:Maximum=80000
	// +optional
	NetIPv4NeighDefaultGcThresh1 *int32 `json:"netIPv4NeighDefaultGcThresh1,omitempty"`
	// NetIPv4NeighDefaultGcThresh2 is net.ipv4.neigh.default.gc_thresh2.
	// +kubebuilder:validation:Minimum=512
	// +kubebuilder:validation:Maximum=90000
	// +optional
	NetIPv4NeighDefaultGcThresh2 *int32 `json:"netIPv4NeighDefaultGcThresh2,omitempty"`
	// NetIPv4NeighDefaultGcThresh3 is net.ipv4.neigh.default.gc_thresh3.
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=100000
	// +optional
	NetIPv4NeighDefaultGcThresh3 *int32 `json:"netIPv4NeighDefaultGcThresh3,omitempty"`
	// NetIPv4TCPFinTimeout is net.ipv4.tcp_fin_timeout.
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=120
	// +optional
	NetIPv4TCPFinTimeout *int32 `json:"netIPv4TCPFinTimeout,omitempty"`
	// NetIPv4TCPKeepaliveProbes is net.ipv4.tcp_keepalive_probes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=15
	// +optional
	NetIPv4TCPKeepaliveProbes *int32 `json:"netIPv4TCPKeepaliveProbes,omitempty"`
	// NetIPv4TCPKeepaliveTime is net.ipv4.tcp_keepalive_time.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=432000
	// +optional
	NetIPv4TCPKeepaliveTime *int32 `json:"netIPv4TCPKeepaliveTime,omitempty"`
	// NetIPv4TCPMaxSynBacklog is net.ipv4.tcp_max_syn_backlog.
	// +kubebuilder:validation:Minimum=128
	// +kubebuilder:validation:Maximum=3240000
	// +optional
	NetIPv4TCPMaxSynBacklog *int32 `json:"netIPv4TCPMaxSynBacklog,omitempty"`
	// NetIPv4TCPMaxTwBuckets is net.ipv4.tcp_max_tw_buckets.
	// +kubebuilder:validation:Minimum=8000
	// +kubebuilder:validation:Maximum=1440000
	// +optional
	NetIPv4TCPMaxTwBuckets *int32 `json:"netIPv4TCPMaxTwBuckets,omitempty"`
	// NetIPv4TCPKeepaliveIntvl is net.ipv4.tcp_keepalive_intvl.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=90
	// +optional
	NetIPv4TCPKeepaliveIntvl *int32 `json:"netIPv4TCPKeepaliveIntvl,omitempty"`
	// NetNetfilterNfConntrackBuckets is net.netfilter.nf_conntrack_buckets.
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=524288
	// +optional
	NetNetfilterNfConntrackBuckets *int32 `json:"netNetfilterNfConntrackBuckets,omitempty"`
	// NetNetfilterNfConntrackMax is net.netfilter.nf_conntrack_max.
	// +kubebuilder:validation:Minimum=131072
	// +kubebuilder:validation:Maximum=2097152
	// +optional
	NetNetfilterNfConntrackMax *int32 `json:"netNetfilterNfConntrackMax,omitempty"`
	// VMMaxMapCount is vm.max_map_count.
	// +kubebuilder:validation:Minimum=65530
	// +kubebuilder:validation:Maximum=262144
	// +optional
	VMMaxMapCount *int32 `json:"vmMaxMapCount,omitempty"`
	// VMSwappiness is vm.swappiness.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	VMSwappiness *int32 `json:"vmSwappiness,omitempty"`
	// VMVfsCachePressure is vm.vfs_cache_pressure.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	VMVfsCachePressure *int32 `json:"vmVfsCachePressure,omitempty"`
	// NetIPv4IPLocalPortRange is net.ipv4.ip_local_port_range, "first last".
	// +kubebuilder:validation:Pattern=`^\d+ \d+$`
	// +optional
	NetIPv4IPLocalPortRange *string `json:"netIPv4IPLocalPortRange,omitempty"`
	// NetIPv4TCPTwReuse is net.ipv4.tcp_tw_reuse.
	// +optional
	NetIPv4TCPTwReuse *bool `json:"netIPv4TCPTwReuse,omitempty"`
}
