package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool condition types.
const (
	ConditionTypeNodeClassReady      = "NodeClassReady"
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
)

// SetCondition sets condition t on the pool; it reports whether anything changed.
func (in *NodePool) SetCondition(t string, status metav1.ConditionStatus, reason, message string) bool {
	return meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	})
}

// IsTrue reports whether condition t is True.
func (in *NodePool) IsTrue(t string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, t)
}
