package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an AKSNodeClass; Ready rolls them up. The AKSNodeClass controller owns them all.
const (
	ConditionTypeImagesReady            = "ImagesReady"
	ConditionTypeKubernetesVersionReady = "KubernetesVersionReady"
	ConditionTypeSubnetsReady           = "SubnetsReady"
	ConditionTypeValidationSucceeded    = "ValidationSucceeded"
	ConditionTypeLocalDNSReady          = "LocalDNSReady"
	ConditionTypeReady                  = "Ready"
)

// readyConditions make up the Ready roll-up.
var readyConditions = []string{
	ConditionTypeImagesReady, ConditionTypeKubernetesVersionReady, ConditionTypeSubnetsReady,
	ConditionTypeValidationSucceeded, ConditionTypeLocalDNSReady,
}

// LocalDNSState is the resolved decision whether nodes run the local DNS.
type LocalDNSState string

// LocalDNS states.
const (
	LocalDNSStateEnabled  LocalDNSState = "Enabled"
	LocalDNSStateDisabled LocalDNSState = "Disabled"
)

// NodeImage is a resolved node image and the instance types it boots.
type NodeImage struct {
	// ID of the image: a community gallery image version
	// (/CommunityGalleries/<gallery>/images/<definition>/versions/<version>) or a shared gallery one.
	// +required
	ID string `json:"id"`
	// Requirements an instance type meets to boot this image (architecture, Hyper-V generation).
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
}

// AKSNodeClassStatus is what the AKSNodeClass controller resolved.
type AKSNodeClassStatus struct {
	// Images nodes of this class boot.
	// +optional
	Images []NodeImage `json:"images,omitempty"`
	// KubernetesVersion nodes of this class run (the control plane's).
	// +optional
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// Conditions: ImagesReady, KubernetesVersionReady, SubnetsReady, ValidationSucceeded,
	// LocalDNSReady and their roll-up Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LocalDNSState is whether nodes of this class run the local DNS.
	// +kubebuilder:validation:Enum:=Enabled;Disabled
	// +optional
	LocalDNSState *LocalDNSState `json:"localDNSState,omitempty"`
}

// IsTrue reports whether condition t is True.
func (in *AKSNodeClass) IsTrue(t string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, t)
}

// GetCondition returns condition t or nil.
func (in *AKSNodeClass) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// SetCondition sets condition t and recomputes Ready: True when every part is True, otherwise the
// first part that is not, with its reason and message.
func (in *AKSNodeClass) SetCondition(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	})
	ready := metav1.Condition{Type: ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: in.Generation}
	for _, part := range readyConditions {
		c := in.GetCondition(part)
		if c == nil {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "AwaitingReconciliation", part+" has not been reconciled"
			break
		}
		if c.Status != metav1.ConditionTrue {
			ready.Status, ready.Reason, ready.Message = c.Status, c.Reason, part+": "+c.Message
			break
		}
	}
	meta.SetStatusCondition(&in.Status.Conditions, ready)
}
