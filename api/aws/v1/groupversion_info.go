// Package v1 contains the karpenter.k8s.aws/v1 API: the EC2NodeClass that NodePools reference to
// launch EC2 instances through Joist's AWS cloud provider. It is wire-compatible with Karpenter's
// EC2NodeClass, so existing manifests apply unchanged.
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "karpenter.k8s.aws", Version: "v1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
