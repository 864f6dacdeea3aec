// Package v1alpha1 contains the kwok.joist.dev/v1alpha1 API: the KWOKNodeClass that NodePools
// reference to launch simulated nodes through Joist's KWOK cloud provider.
// +kubebuilder:object:generate=true
// +groupName=kwok.joist.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "kwok.joist.dev", Version: "v1alpha1"}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
