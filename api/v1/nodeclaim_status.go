package v1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim condition types. Each is owned by exactly one controller; Ready is the roll-up of
// Launched, Registered and Initialized.
const (
	ConditionTypeLaunched       = "Launched"
	ConditionTypeRegistered     = "Registered"
	ConditionTypeInitialized    = "Initialized"
	ConditionTypeReady          = "Ready"
	ConditionTypeDrifted        = "Drifted"
	ConditionTypeConsolidatable = "Consolidatable"
	ConditionTypeEmpty          = "Empty"
	ConditionTypeDisrupting     = "Disrupting"
)

// lifecycleConditions make up the NodeClaim Ready roll-up.
var lifecycleConditions = []string{ConditionTypeLaunched, ConditionTypeRegistered, ConditionTypeInitialized}

// IsTrue reports whether condition t is True.
func (in *NodeClaim) IsTrue(t string) bool {
	return meta.IsStatusConditionTrue(in.Status.Conditions, t)
}

// GetCondition returns condition t or nil.
func (in *NodeClaim) GetCondition(t string) *metav1.Condition {
	return meta.FindStatusCondition(in.Status.Conditions, t)
}

// SetCondition sets condition t and recomputes the Ready roll-up. It reports whether anything changed.
func (in *NodeClaim) SetCondition(t string, status metav1.ConditionStatus, reason, message string) bool {
	changed := meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: in.Generation,
	})
	if t == ConditionTypeReady {
		return changed
	}
	return in.rollUpReady() || changed
}

// ClearCondition removes condition t; it reports whether it was present.
func (in *NodeClaim) ClearCondition(t string) bool {
	return meta.RemoveStatusCondition(&in.Status.Conditions, t)
}

func (in *NodeClaim) rollUpReady() bool {
	for _, t := range lifecycleConditions {
		c := in.GetCondition(t)
		if c != nil && c.Status == metav1.ConditionTrue {
			continue
		}
		reason, msg := "Awaiting"+t, "waiting for "+t
		if c != nil {
			reason, msg = c.Reason, c.Message
		}
		return meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
			Type: ConditionTypeReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg,
			ObservedGeneration: in.Generation,
		})
	}
	return meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
		Type: ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: in.Generation,
	})
}
