// Package v1 contains the karpenter.sh/v1 API (NodePool, NodeClaim), wire-compatible with Karpenter v1
// so that existing NodePool YAML applies to Joist unchanged.
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "karpenter.sh", Version: "v1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
