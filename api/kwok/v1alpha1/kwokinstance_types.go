package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KWOKInstanceSpec is a simulated instance that is booting: the Node it registers as, and when.
type KWOKInstanceSpec struct {
	// RegisterAt is when the instance's Node appears (launch time plus the NodeClass's registrationDelay).
	// +required
	RegisterAt metav1.Time `json:"registerAt"`
	// InstanceType, Zone and CapacityType are the offering launched.
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// +optional
	Zone string `json:"zone,omitempty"`
	// +optional
	CapacityType string `json:"capacityType,omitempty"`
	// Labels, Annotations, Taints, Capacity and Allocatable are the Node's.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
}

// KWOKInstance is the KWOK cloud's record of an instance launched whose Node has not registered yet.
// It lives in the apiserver, not in the manager's memory, so that, as with a real cloud, an instance
// launched before a manager crash still registers afterwards and is not launched twice. The cloud
// deletes it once the Node exists.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kwokinstances,scope=Cluster,categories=joist
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".spec.instanceType"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".spec.zone"
// +kubebuilder:printcolumn:name="Register at",type="date",JSONPath=".spec.registerAt"
type KWOKInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KWOKInstanceSpec `json:"spec,omitempty"`
}

// KWOKInstanceList is a list of KWOKInstances.
// +kubebuilder:object:root=true
type KWOKInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKInstance `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KWOKInstance{}, &KWOKInstanceList{})
}
