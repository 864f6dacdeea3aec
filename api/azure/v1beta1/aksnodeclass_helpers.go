package v1beta1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// AKSNodeClassHashVersion changes whenever Hash would change for an unchanged spec, so that claims
// hashed by an older build are not reported drifted.
const AKSNodeClassHashVersion = "v1"

// Hash is the NodeClass's static hash: every spec field that shapes a VM at launch except tags
// (which the provider can change in place, as the AKS provider does).
func (in *AKSNodeClass) Hash() string {
	spec := in.Spec.DeepCopy()
	spec.Tags = nil
	data, err := json.Marshal(spec) // map keys are sorted: stable
	if err != nil {
		panic(err) // a spec of plain data always marshals
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// ImageFamily is spec.imageFamily, Ubuntu when unset.
func (in *AKSNodeClass) ImageFamily() string {
	if in.Spec.ImageFamily == nil || *in.Spec.ImageFamily == "" {
		return ImageFamilyUbuntu
	}
	return *in.Spec.ImageFamily
}

// OSSKU is the kubernetes.azure.com/os-sku label value of the class's nodes.
func (in *AKSNodeClass) OSSKU() string {
	if in.ImageFamily() == ImageFamilyAzureLinux {
		return "AzureLinux"
	}
	return "Ubuntu"
}

// OSDiskSizeGB is spec.osDiskSizeGB, 128 when unset (the CRD default).
func (in *AKSNodeClass) OSDiskSizeGB() int32 {
	if in.Spec.OSDiskSizeGB == nil {
		return 128
	}
	return *in.Spec.OSDiskSizeGB
}

// GPUDriverInstallation reports whether AKS installs GPU drivers (gpu.mode Driver, the default).
func (in *AKSNodeClass) GPUDriverInstallation() bool {
	return in.Spec.GPU == nil || in.Spec.GPU.Mode == nil || *in.Spec.GPU.Mode != GPUModeNone
}

// EncryptionAtHost reports whether security.encryptionAtHost is true.
func (in *AKSNodeClass) EncryptionAtHost() bool {
	s := in.Spec.Security
	return s != nil && s.EncryptionAtHost != nil && *s.EncryptionAtHost
}

// TrustedLaunch reports whether vTPM or Secure Boot is on.
func (in *AKSNodeClass) TrustedLaunch() bool {
	s := in.Spec.Security
	if s == nil || s.TrustedLaunch == nil {
		return false
	}
	tl := s.TrustedLaunch
	return (tl.VTPM != nil && *tl.VTPM) || (tl.SecureBoot != nil && *tl.SecureBoot)
}
