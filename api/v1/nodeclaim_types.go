package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaimSpec is the purchase order for one node. It is immutable once created.
type NodeClaimSpec struct {
	// Taints are applied to the node at launch and kept.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are removed by another agent once the node is initialized.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="startupTaint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements the launched node must satisfy (narrowed from the NodePool's by the solver).
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'In' ? (has(x.values) && x.values.size() != 0) : true)",message="requirements with operator 'In' must have a value defined"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator in ['Gt', 'Lt', 'Gte', 'Lte'] ? (has(x.values) && x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)",message="requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have exactly one non-negative integer value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator in ['Exists', 'DoesNotExist'] ? (!has(x.values) || x.values.size() == 0) : true)",message="requirements with operator 'Exists' or 'DoesNotExist' must not have values"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? (has(x.values) && x.values.size() >= x.minValues) : true)",message="requirements with 'minValues' must have at least that many values specified in the 'values' field"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !x.key.find('^([^/]+)').endsWith('karpenter.sh'))",message="requirement key domain \"karpenter.sh\" is restricted: only karpenter.sh/capacity-type and karpenter.sh/nodepool may be constrained"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key != 'kubernetes.io/hostname')",message="requirement key \"kubernetes.io/hostname\" is restricted"
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources are the requests of the pods the node was launched for.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef points at the cloud-specific NodeClass.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long a drain may wait before pods are deleted anyway.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node may live; "Never" disables expiry.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// ResourceRequirements holds the requests a NodeClaim was sized for.
type ResourceRequirements struct {
	// Requests are the summed requests (incl. DaemonSet overhead) of the pods the node was launched for.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is what Joist and the cloud provider observed about the claim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node that registered for this claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's id of the instance, e.g. kwok://name or aws:///zone/i-123.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the machine image the instance runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's total resources.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the capacity less system overhead.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions: Launched, Registered, Initialized, Ready, Drifted, Consolidatable, Empty, Disrupting.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod was last bound to or removed from the node.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

// NodeClaim is a request for one node from the cloud provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: delete the NodeClaim and let Joist launch a new one"
	// +required
	Spec   NodeClaimSpec   `json:"spec"`
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeClaim{}, &NodeClaimList{})
}
