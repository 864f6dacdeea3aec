package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Image families an AKSNodeClass may name.
const (
	ImageFamilyUbuntu     = "Ubuntu"
	ImageFamilyUbuntu2204 = "Ubuntu2204"
	ImageFamilyUbuntu2404 = "Ubuntu2404"
	ImageFamilyAzureLinux = "AzureLinux"
)

// FIPSMode turns FIPS-compliant node images on or off.
type FIPSMode string

// FIPS modes.
const (
	FIPSModeFIPS     FIPSMode = "FIPS"
	FIPSModeDisabled FIPSMode = "Disabled"
)

// AKSNodeClassSpec is what Joist needs to launch AKS nodes as Azure VMs: the subnet, the image
// family, the OS disk, kubelet and OS settings and tags.
// +kubebuilder:validation:XValidation:message="FIPS is not yet supported for Ubuntu2404",rule="has(self.fipsMode) && self.fipsMode == 'FIPS' ? (has(self.imageFamily) && self.imageFamily != 'Ubuntu2404') : true"
// +kubebuilder:validation:XValidation:message="TrustedLaunch is required for FIPS support with Ubuntu2204",rule="has(self.fipsMode) && self.fipsMode == 'FIPS' ? (has(self.imageFamily) && (self.imageFamily != 'Ubuntu2204' || (has(self.security) && has(self.security.trustedLaunch) && ((has(self.security.trustedLaunch.vtpm) && self.security.trustedLaunch.vtpm) || (has(self.security.trustedLaunch.secureBoot) && self.security.trustedLaunch.secureBoot))))) : true"
// +kubebuilder:validation:XValidation:message="TrustedLaunch with FIPSMode FIPS is only supported for Ubuntu and Ubuntu2204",rule="has(self.fipsMode) && self.fipsMode == 'FIPS' && has(self.security) && has(self.security.trustedLaunch) && ((has(self.security.trustedLaunch.vtpm) && self.security.trustedLaunch.vtpm) || (has(self.security.trustedLaunch.secureBoot) && self.security.trustedLaunch.secureBoot)) ? (!has(self.imageFamily) || self.imageFamily == 'Ubuntu' || self.imageFamily == 'Ubuntu2204') : true"
// +kubebuilder:validation:XValidation:message="kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified",rule="!has(self.linuxOSConfig) || !has(self.linuxOSConfig.swapFileSize) || (has(self.kubelet) && has(self.kubelet.failSwapOn) && self.kubelet.failSwapOn == false)"
type AKSNodeClassSpec struct {
	// VNETSubnetID is the subnet the nodes' NICs are placed in; unset means the operator's default
	// subnet ($AZURE_SUBNET_ID / --vnet-subnet-id).
	// +kubebuilder:validation:Pattern=`(?i)^\/subscriptions\/[^\/]+\/resourceGroups\/[a-zA-Z0-9_\-().]{0,89}[a-zA-Z0-9_\-()]\/providers\/Microsoft\.Network\/virtualNetworks\/[^\/]+\/subnets\/[^\/]+$`
	// +optional
	VNETSubnetID *string `json:"vnetSubnetID,omitempty"`
	// OSDiskSizeGB is the OS disk's size in GB.
	// +default=128
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=2048
	// +optional
	OSDiskSizeGB *int32 `json:"osDiskSizeGB,omitempty"`
	// ImageFamily is the node image family; Ubuntu follows the AKS default Ubuntu release for the
	// cluster's Kubernetes version.
	// +default="Ubuntu"
	// +kubebuilder:validation:Enum:={Ubuntu,Ubuntu2204,Ubuntu2404,AzureLinux}
	// +optional
	ImageFamily *string `json:"imageFamily,omitempty"`
	// FIPSMode selects FIPS-enabled node images.
	// +kubebuilder:validation:Enum:={FIPS,Disabled}
	// +optional
	FIPSMode *FIPSMode `json:"fipsMode,omitempty"`
	// Tags applied to the VMs, NICs and disks Joist creates. Changing them is no drift.
	// +kubebuilder:validation:XValidation:message="tags keys must be less than 512 characters",rule="self.all(k, size(k) <= 512)"
	// +kubebuilder:validation:XValidation:message="tags keys must not contain '<', '>', '%', '&', or '?'",rule="self.all(k, !k.matches('[<>%&?]'))"
	// +kubebuilder:validation:XValidation:message="tags keys must not contain '\\'",rule="self.all(k, !k.contains('\\\\'))"
	// +kubebuilder:validation:XValidation:message="tags values must be less than 256 characters",rule="self.all(k, size(self[k]) <= 256)"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet settings of the nodes (a subset of the kubelet configuration AKS supports).
	// +kubebuilder:validation:XValidation:message="imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",rule="has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true"
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// MaxPods per node. Unset: 250 with Azure CNI Overlay, Cilium or no CNI plugin, 30 with Azure
	// CNI on the node subnet, 110 otherwise.
	// +kubebuilder:validation:Minimum:=10
	// +kubebuilder:validation:Maximum:=250
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// Security settings of the nodes.
	// +optional
	Security *Security `json:"security,omitempty"`
	// LocalDNS configures the per-node DNS cache with its VnetDNS and KubeDNS overrides.
	// +optional
	LocalDNS *LocalDNS `json:"localDNS,omitempty"`
	// GPU settings of GPU nodes.
	// +optional
	GPU *GPU `json:"gpu,omitempty"`
	// ArtifactStreaming streams container images on demand (ACR artifact streaming).
	// +optional
	ArtifactStreaming *ArtifactStreaming `json:"artifactStreaming,omitempty"`
	// LinuxOSConfig are the AKS custom Linux OS settings (sysctls, swap, transparent huge pages).
	// +optional
	LinuxOSConfig *LinuxOSConfiguration `json:"linuxOSConfig,omitempty"`
}

// ArtifactStreaming turns ACR artifact streaming on for the nodes.
type ArtifactStreaming struct {
	// Enabled turns artifact streaming on (default false). Ignored on arm64.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// Security are the nodes' security settings.
type Security struct {
	// EncryptionAtHost encrypts the VM's temp and cache disks at the host.
	// +optional
	EncryptionAtHost *bool `json:"encryptionAtHost,omitempty"`
	// TrustedLaunch enables the Trusted Launch features.
	// +optional
	TrustedLaunch *TrustedLaunch `json:"trustedLaunch,omitempty"`
}

// TrustedLaunch are the Trusted Launch features of the VMs.
type TrustedLaunch struct {
	// VTPM enables the virtual TPM.
	// +optional
	VTPM *bool `json:"vtpm,omitempty"`
	// SecureBoot enables Secure Boot.
	// +optional
	SecureBoot *bool `json:"secureBoot,omitempty"`
}

// GPUMode says who installs GPU drivers.
// +kubebuilder:validation:Enum:={Driver,None}
type GPUMode string

// GPU modes.
const (
	// GPUModeDriver has AKS install the drivers; only GPU SKUs with managed drivers (NVIDIA) are offered.
	GPUModeDriver GPUMode = "Driver"
	// GPUModeNone installs no drivers (a GPU operator does); every GPU SKU is offered.
	GPUModeNone GPUMode = "None"
)

// GPU are the settings of GPU nodes.
type GPU struct {
	// Mode of driver management; ignored for SKUs without GPUs.
	// +default="Driver"
	// +optional
	Mode *GPUMode `json:"mode,omitempty"`
}

// AKSNodeClass configures the Azure VMs Joist launches for a NodePool on AKS.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=aksnodeclasses,scope=Cluster,categories={karpenter,nap},shortName={aksnc,aksncs}
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageFamily",type=string,JSONPath=".spec.imageFamily",priority=1
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
type AKSNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec AKSNodeClassSpec `json:"spec,omitempty"`
	// +optional
	Status AKSNodeClassStatus `json:"status,omitempty"`
}

// AKSNodeClassList contains a list of AKSNodeClass.
// +kubebuilder:object:root=true
type AKSNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AKSNodeClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&AKSNodeClass{}, &AKSNodeClassList{})
}
