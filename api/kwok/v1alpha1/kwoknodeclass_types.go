package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KWOKNodeClassSpec describes the simulated machines.
type KWOKNodeClassSpec struct {
	// ImageID is reported as the nodes' image; changing it marks existing nodes Drifted.
	// +kubebuilder:default:="kwok-image-v1"
	// +kubebuilder:validation:MinLength=1
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// RegistrationDelay is how long a launched instance takes before its Node appears.
	// +kubebuilder:validation:Pattern=`^([0-9]+(ms|s|m))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	RegistrationDelay *metav1.Duration `json:"registrationDelay,omitempty"`
}

// KWOKNodeClassStatus is what Joist observed about the class.
type KWOKNodeClassStatus struct {
	// Conditions: Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KWOKNodeClass is the NodeClass of Joist's simulated KWOK cloud.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=joist
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.imageID"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KWOKNodeClassSpec   `json:"spec,omitempty"`
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&KWOKNodeClass{}, &KWOKNodeClassList{})
}
