package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Action is what a rule does when an object breaks it: deny the request, admit it with a warning, or
// nothing. An empty action means the rule's documented default.
// +kubebuilder:validation:Enum=deny;warn;off
type Action string

const (
	ActionDeny Action = "deny"
	ActionWarn Action = "warn"
	ActionOff  Action = "off"
)

// Enforcement is what a Guardrail's denials do. Deny rejects the request; Warn admits it with an
// admission warning naming the rule and the fix; Audit admits it silently. In Warn and Audit the
// Guardrail changes nothing Joist enforces (no pod is mutated, no NodePool binding or cluster ceiling
// applies); its status lists the existing objects it would deny.
// +kubebuilder:validation:Enum=Deny;Warn;Audit
type Enforcement string

const (
	EnforcementDeny  Enforcement = "Deny"
	EnforcementWarn  Enforcement = "Warn"
	EnforcementAudit Enforcement = "Audit"
)

// GuardrailSpec is a platform team's policy for NodePools, pod resources, team isolation and
// do-not-disrupt. Every section is optional; with several Guardrails the strictest setting wins and
// settings no Guardrail makes take Joist's built-in defaults (see docs/guardrails.md).
type GuardrailSpec struct {
	// Enforcement of the rules this Guardrail sets: Deny (the default), Warn or Audit. Switch a new
	// Guardrail to Deny once status.wouldDeny is 0 or the objects it lists are fixed.
	// +kubebuilder:default=Deny
	// +optional
	Enforcement Enforcement `json:"enforcement,omitempty"`
	// BuiltInEnforcement is the enforcement of Joist's built-in defaults (the rules no Guardrail
	// sets, see docs/guardrails.md): Deny, Warn or Audit. Unset means no opinion; across Guardrails
	// the strictest value wins, and with none set the built-in defaults deny. The status of every
	// Guardrail that sets it also lists the existing objects the built-in defaults would deny.
	// +optional
	BuiltInEnforcement Enforcement `json:"builtInEnforcement,omitempty"`
	// NodePools are the rules every NodePool is validated against on create and update.
	// +optional
	NodePools NodePoolRules `json:"nodePools,omitempty"`
	// ClusterLimits is a ceiling on the capacity of all Joist nodes together, across every NodePool.
	// +optional
	ClusterLimits *ClusterLimits `json:"clusterLimits,omitempty"`
	// PodDefaults fill in missing container requests and limits (LimitRange semantics) for pods in the
	// selected namespaces, and can raise non-CPU requests to their limits.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	PodDefaults []PodDefaults `json:"podDefaults,omitempty"`
	// NodePoolBindings restrict the pods of the selected namespaces to the listed NodePools.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	NodePoolBindings []NodePoolBinding `json:"nodePoolBindings,omitempty"`
	// DoNotDisrupt limits who may use the karpenter.sh/do-not-disrupt annotation and for how long.
	// +optional
	DoNotDisrupt *DoNotDisruptRules `json:"doNotDisrupt,omitempty"`
	// PodOptOut names the namespaces whose pods may skip the pod guardrails (defaults, bindings,
	// do-not-disrupt limits) with the label policy.joist.dev/guardrails=disabled. Elsewhere the label
	// on a pod is ignored: anyone who can create a pod can set it. (The label on a namespace, which
	// only namespace administrators can set, is always honoured.)
	// +optional
	PodOptOut *PodOptOut `json:"podOptOut,omitempty"`
}

// PodOptOut allows the pod-level opt-out label in some namespaces.
type PodOptOut struct {
	// NamespaceSelector picks the namespaces; an empty selector selects all of them.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
}

// NodePoolRules are the per-NodePool admission rules.
type NodePoolRules struct {
	// RequireLimits: every NodePool must set spec.limits for these resources. Default: deny, cpu and memory.
	// +optional
	RequireLimits *RequireLimitsRule `json:"requireLimits,omitempty"`
	// MaxLimits: no NodePool's spec.limits may exceed these values. Default: off.
	// +optional
	MaxLimits *MaxLimitsRule `json:"maxLimits,omitempty"`
	// GPU: pools that can launch accelerator instance types must carry a NoSchedule or NoExecute taint,
	// and should not expire. Default: deny without taint, warn on expiry.
	// +optional
	GPU *GPURule `json:"gpu,omitempty"`
	// Spot: a spot-capable pool must admit at least minInstanceTypes instance types. Default: warn, 10.
	// +optional
	Spot *SpotRule `json:"spot,omitempty"`
	// Overlap: two pools of equal weight that can launch the same node for the same pod. Default: deny.
	// +optional
	Overlap *OverlapRule `json:"overlap,omitempty"`
}

// RequireLimitsRule demands spec.limits entries.
type RequireLimitsRule struct {
	// +optional
	Action Action `json:"action,omitempty"`
	// Resources every NodePool must limit. Default: cpu and memory.
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	// +optional
	Resources []corev1.ResourceName `json:"resources,omitempty"`
}

// MaxLimitsRule caps spec.limits of each NodePool.
type MaxLimitsRule struct {
	// +optional
	Action Action `json:"action,omitempty"`
	// Limits is the largest spec.limits value any single NodePool may declare, per resource.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// GPURule protects accelerator capacity.
type GPURule struct {
	// Action when an accelerator-capable pool has no NoSchedule/NoExecute taint. Default: deny.
	// +optional
	Action Action `json:"action,omitempty"`
	// ExpireAfterAction when an accelerator-capable pool's expireAfter is not Never. Default: warn.
	// +optional
	ExpireAfterAction Action `json:"expireAfterAction,omitempty"`
	// ResourceNames are the extended resources that make an instance type an accelerator type.
	// Default: nvidia.com/gpu, amd.com/gpu, aws.amazon.com/neuron, habana.ai/gaudi, google.com/tpu.
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	// +optional
	ResourceNames []corev1.ResourceName `json:"resourceNames,omitempty"`
}

// SpotRule keeps spot pools diverse enough to survive a capacity shortage.
type SpotRule struct {
	// +optional
	Action Action `json:"action,omitempty"`
	// MinInstanceTypes is how many catalog instance types a spot-capable pool must admit. Default: 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MinInstanceTypes *int32 `json:"minInstanceTypes,omitempty"`
}

// OverlapRule rejects pools the scheduler would choose between arbitrarily.
type OverlapRule struct {
	// +optional
	Action Action `json:"action,omitempty"`
}

// ClusterLimits is a ceiling across all NodePools. The provisioner never launches past it; at
// admission, the sum of the pools' declared spec.limits is checked against it too.
type ClusterLimits struct {
	// Action at admission when the declared limits of all pools add up to more than the ceiling.
	// Default: deny. The runtime ceiling applies whatever the action; remove a value to lift it.
	// +optional
	Action Action `json:"action,omitempty"`
	// CPU is the most CPU all Joist nodes together may have.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Memory is the most memory all Joist nodes together may have.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// Nodes is the most Joist nodes (including in-flight NodeClaims) the cluster may have.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
}

// PodDefaults are LimitRange-like container defaults applied by the pod mutating webhook.
type PodDefaults struct {
	// NamespaceSelector picks the namespaces; empty or absent selects every namespace the webhook sees.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// DefaultRequests fill requests a container does not set (LimitRange defaultRequest). A container
	// that sets a limit but no request gets request = limit instead.
	// +optional
	DefaultRequests corev1.ResourceList `json:"defaultRequests,omitempty"`
	// DefaultLimits fill limits a container does not set (LimitRange default).
	// +optional
	DefaultLimits corev1.ResourceList `json:"defaultLimits,omitempty"`
	// AlignNonCPURequests raises memory and every other non-CPU request to its limit, because
	// consolidation packs by requests and a request far below the limit OOMs after repacking.
	// +optional
	AlignNonCPURequests bool `json:"alignNonCPURequests,omitempty"`
}

// NodePoolBinding confines the pods of some namespaces to some NodePools (team isolation).
type NodePoolBinding struct {
	// NamespaceSelector picks the namespaces; an empty selector selects all of them.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
	// NodePools the selected namespaces' pods may land on.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +listType=set
	// +required
	NodePools []string `json:"nodePools"`
}

// DoNotDisruptRules govern the karpenter.sh/do-not-disrupt annotation. Joist accepts "true"
// (forever), "false", or a Go duration such as "4h" counted from the object's creation.
type DoNotDisruptRules struct {
	// Action when the annotation breaks these rules. Default: deny.
	// +optional
	Action Action `json:"action,omitempty"`
	// NamespaceSelector picks the namespaces whose pods may use the annotation; absent means all.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// MaxDuration is the longest protection a duration value may ask for.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +optional
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
	// AllowForever permits the value "true" (protection without end). Default: true.
	// +optional
	AllowForever *bool `json:"allowForever,omitempty"`
	// AllowOnNodes permits the annotation on Nodes and NodeClaims. Default: true.
	// +optional
	AllowOnNodes *bool `json:"allowOnNodes,omitempty"`
}

// Guardrail is a cluster-wide admission policy for NodePools, pods and disruption.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=guardrails,scope=Cluster,categories=joist,shortName=gr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Enforcement",type="string",JSONPath=".spec.enforcement"
// +kubebuilder:printcolumn:name="Would-Deny",type="integer",JSONPath=".status.wouldDeny"
// +kubebuilder:printcolumn:name="Rules",type="string",JSONPath=".status.summary"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Guardrail struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec GuardrailSpec `json:"spec,omitempty"`
	// +optional
	Status GuardrailStatus `json:"status,omitempty"`
}

// GuardrailList is a list of Guardrails.
// +kubebuilder:object:root=true
type GuardrailList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guardrail `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Guardrail{}, &GuardrailList{})
}
