package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeSelectorRequirementWithMinValues is a node selector requirement that may also demand a minimum
// number of distinct values (e.g. at least 5 instance types) for the nodes launched from it.
// It has the same wire shape as Karpenter v1's type.
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^(([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values is the set of values; one non-negative integer for Gt/Lt/Gte/Lte.
	// +kubebuilder:validation:MaxItems=500
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the minimum number of distinct values of Key the launch decision must keep open.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorRequirement returns the core form of the requirement (dropping MinValues).
func (r NodeSelectorRequirementWithMinValues) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
}

// NodeClassReference points at the provider-specific NodeClass object.
type NodeClassReference struct {
	// Kind of the referent, e.g. EC2NodeClass or KWOKNodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the referent.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// Group of the referent, e.g. karpenter.k8s.aws.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group may not be empty"
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
}
