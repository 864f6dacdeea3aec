package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GuardrailStatus reports the existing objects this Guardrail would deny, kept current by the
// guardrail report controller. Guardrails take effect on the next admission request whatever it says.
type GuardrailStatus struct {
	// ObservedGeneration is the spec generation the report was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// WouldDeny is the number of existing objects (NodePools, Pods, Nodes, NodeClaims) that this
	// Guardrail's rules would deny in Deny mode, and, when it sets builtInEnforcement, the built-in
	// defaults too. In Deny mode these are objects admitted before the rule existed.
	// +optional
	WouldDeny int32 `json:"wouldDeny"`
	// Summary is the per-rule count as one line, e.g. "nodePools.overlap=2 nodePools.requireLimits=5".
	// +optional
	Summary string `json:"summary,omitempty"`
	// Rules counts the objects per rule.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=rule
	// +optional
	Rules []RuleCount `json:"rules,omitempty"`
	// Objects lists the first objects that would be denied (in kind, namespace, name and rule order),
	// at most 100; wouldDeny and rules count them all.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Objects []DeniedObject `json:"objects,omitempty"`
	// LastEvaluated is when the report was last computed.
	// +optional
	LastEvaluated *metav1.Time `json:"lastEvaluated,omitempty"`
}

// RuleCount is how many existing objects break one rule.
type RuleCount struct {
	// Rule is the rule's name as in messages, e.g. nodePools.overlap.
	// +kubebuilder:validation:MaxLength=128
	Rule string `json:"rule"`
	// Objects is the number of objects that break it.
	Objects int32 `json:"objects"`
}

// DeniedObject is one existing object that would be denied, with the rule and the message.
type DeniedObject struct {
	// +kubebuilder:validation:MaxLength=64
	Kind string `json:"kind"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=128
	Rule string `json:"rule"`
	// Field is the path of the offending field.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Field string `json:"field,omitempty"`
	// Message is the denial the webhook would give, naming the rule and the fix.
	// +kubebuilder:validation:MaxLength=2048
	Message string `json:"message"`
}
