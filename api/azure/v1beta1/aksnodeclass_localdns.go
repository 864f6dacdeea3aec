package v1beta1

import (
	v1 "github.com/joist-dev/joist/api/v1"
)

// LocalDNSMode says whether the node-local DNS cache runs.
// +kubebuilder:validation:Enum:={Preferred,Required,Disabled}
type LocalDNSMode string

// LocalDNS modes.
const (
	LocalDNSModePreferred LocalDNSMode = "Preferred"
	LocalDNSModeRequired  LocalDNSMode = "Required"
	LocalDNSModeDisabled  LocalDNSMode = "Disabled"
)

// LocalDNS configures the per-node DNS cache and where it forwards each zone.
type LocalDNS struct {
	// Mode of the local DNS.
	// +required
	Mode LocalDNSMode `json:"mode,omitempty"`
	// VnetDNSOverrides apply to queries of pods with dnsPolicy Default and of the kubelet.
	// +required
	// +listType=map
	// +listMapKey=zone
	// +kubebuilder:validation:XValidation:message="must contain required zones '.' and 'cluster.local'",rule="['.', 'cluster.local'].all(z, self.exists(x, x.zone == z))"
	// +kubebuilder:validation:XValidation:message="root zone '.' cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",rule="!self.exists(x, x.zone == '.' && x.forwardDestination == 'ClusterCoreDNS')"
	// +kubebuilder:validation:XValidation:message="external domains cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",rule="!self.exists(x, x.zone != '.' && !x.zone.endsWith('cluster.local') && x.forwardDestination == 'ClusterCoreDNS')"
	// +kubebuilder:validation:MaxItems=100
	VnetDNSOverrides []LocalDNSZoneOverride `json:"vnetDNSOverrides,omitempty"`
	// KubeDNSOverrides apply to queries of pods with dnsPolicy ClusterFirst.
	// +required
	// +listType=map
	// +listMapKey=zone
	// +kubebuilder:validation:XValidation:message="must contain required zones '.' and 'cluster.local'",rule="['.', 'cluster.local'].all(z, self.exists(x, x.zone == z))"
	// +kubebuilder:validation:MaxItems=100
	KubeDNSOverrides []LocalDNSZoneOverride `json:"kubeDNSOverrides,omitempty"`
}

// LocalDNSZoneOverride is how the local DNS serves one zone.
// +kubebuilder:validation:XValidation:message="'cluster.local' cannot be forwarded to VnetDNS",rule="!(self.zone.endsWith('cluster.local') && self.forwardDestination == 'VnetDNS')"
// +kubebuilder:validation:XValidation:message="serveStale Verify cannot be used with protocol ForceTCP",rule="!(self.serveStale == 'Verify' && self.protocol == 'ForceTCP')"
type LocalDNSZoneOverride struct {
	// Zone is the DNS zone (".", "cluster.local", …).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^(\.|[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*\.?)$`
	Zone string `json:"zone,omitempty"`
	// QueryLogging level.
	// +kubebuilder:validation:Enum:={Error,Log}
	// +required
	QueryLogging string `json:"queryLogging,omitempty"`
	// Protocol to the upstream server.
	// +kubebuilder:validation:Enum:={PreferUDP,ForceTCP}
	// +required
	Protocol string `json:"protocol,omitempty"`
	// ForwardDestination is the upstream server.
	// +kubebuilder:validation:Enum:={ClusterCoreDNS,VnetDNS}
	// +required
	ForwardDestination string `json:"forwardDestination,omitempty"`
	// ForwardPolicy selects among several upstream servers.
	// +kubebuilder:validation:Enum:={Sequential,RoundRobin,Random}
	// +required
	ForwardPolicy string `json:"forwardPolicy,omitempty"`
	// MaxConcurrent queries.
	// +kubebuilder:validation:Minimum=0
	// +required
	MaxConcurrent *int32 `json:"maxConcurrent,omitempty"`
	// CacheDuration is the cache's maximum TTL.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +required
	CacheDuration v1.NillableDuration `json:"cacheDuration"`
	// ServeStaleDuration is how long stale answers may be served.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +required
	ServeStaleDuration v1.NillableDuration `json:"serveStaleDuration"`
	// ServeStale policy.
	// +kubebuilder:validation:Enum:={Verify,Immediate,Disable}
	// +required
	ServeStale string `json:"serveStale,omitempty"`
}
