// Package v1beta1 contains the karpenter.azure.com/v1beta1 API: the AKSNodeClass that NodePools
// reference to launch Azure VMs through Joist's Azure cloud provider. It is wire-compatible with the
// AKS Karpenter provider's AKSNodeClass (fields, defaults and CEL rules), so existing manifests apply
// unchanged.
// +kubebuilder:object:generate=true
// +groupName=karpenter.azure.com
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "karpenter.azure.com", Version: "v1beta1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
