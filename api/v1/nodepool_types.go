package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolSpec is the policy for the nodes Joist may launch: what they look like (template), when they
// may be taken away (disruption), how much the pool may hold (limits) and its priority (weight).
type NodePoolSpec struct {
	// Template describes the NodeClaims launched from this pool.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls when nodes of this pool may be removed or replaced.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits caps the total capacity of the nodes in this pool; no launch may exceed it.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders pools: the highest-weight pool that fits a pod is tried first.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Limits is the resource ceiling of a NodePool.
type Limits corev1.ResourceList

// NodeClaimTemplate is the NodeClaim metadata and spec a NodePool stamps out.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the subset of metadata a template may set on the nodes it launches.
type ObjectMeta struct {
	// Labels are applied to every NodeClaim and Node launched from the template. Keys are checked
	// here; values (whose regex CEL cannot afford on unbounded map values) are checked by the
	// provisioner, which refuses to launch from a pool with an invalid one and says which.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'karpenter.sh/capacity-type' || !k.find('^([^/]+)').endsWith('karpenter.sh'))",message="label domain \"karpenter.sh\" is restricted: remove the karpenter.sh/ label, Joist sets the well-known karpenter.sh labels itself"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'kubernetes.io/hostname')",message="label \"kubernetes.io/hostname\" is restricted: the kubelet sets it per node"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'kubernetes.io/arch', 'kubernetes.io/os', 'beta.kubernetes.io/instance-type', 'beta.kubernetes.io/arch', 'beta.kubernetes.io/os', 'failure-domain.beta.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/region'] || k.find('^([^/]+)').endsWith('node.kubernetes.io') || k.find('^([^/]+)').endsWith('node-restriction.kubernetes.io') || !k.find('^([^/]+)').endsWith('kubernetes.io'))",message="label domain \"kubernetes.io\" is restricted: use your own domain (example.com/team), or node.kubernetes.io/ or node-restriction.kubernetes.io/"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.find('^([^/]+)').endsWith('kops.k8s.io') || !k.find('^([^/]+)').endsWith('k8s.io'))",message="label domain \"k8s.io\" is restricted: use your own domain (example.com/team)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="label keys must be valid Kubernetes label keys: an optional DNS-subdomain prefix and '/', then at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are applied to every NodeClaim and Node launched from the template.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="annotation keys must be valid Kubernetes annotation keys: an optional DNS-subdomain prefix and '/', then at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the spec of the NodeClaims a NodePool launches. It differs from
// NodeClaimSpec only in what it may not say (no resources, no karpenter.sh/nodepool requirement).
type NodeClaimTemplateSpec struct {
	// Taints are applied to the node at launch and kept; pods must tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are expected to be removed by another agent once the node is initialized.
	// Pods need not tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="startupTaint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the labels (instance type, zone, capacity type, …) of launched nodes.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator == 'In' ? (has(x.values) && x.values.size() != 0) : true)",message="requirements with operator 'In' must have a value defined"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator in ['Gt', 'Lt', 'Gte', 'Lte'] ? (has(x.values) && x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)",message="requirements with operator 'Gt', 'Lt', 'Gte' or 'Lte' must have exactly one non-negative integer value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator in ['Exists', 'DoesNotExist'] ? (!has(x.values) || x.values.size() == 0) : true)",message="requirements with operator 'Exists' or 'DoesNotExist' must not have values"
	// +kubebuilder:validation:XValidation:rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? (has(x.values) && x.values.size() >= x.minValues) : true)",message="requirements with 'minValues' must have at least that many values specified in the 'values' field"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key == 'karpenter.sh/capacity-type' || !x.key.find('^([^/]+)').endsWith('karpenter.sh'))",message="requirement key domain \"karpenter.sh\" is restricted: only karpenter.sh/capacity-type may be constrained"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key != 'kubernetes.io/hostname')",message="requirement key \"kubernetes.io/hostname\" is restricted: use pod anti-affinity or topology spread instead"
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef points at the cloud-specific NodeClass (EC2NodeClass, KWOKNodeClass, …).
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="nodeClassRef.group is immutable: create a new NodePool to change the NodeClass group"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="nodeClassRef.kind is immutable: create a new NodePool to change the NodeClass kind"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// ExpireAfter is how long a node may live before it is replaced; "Never" disables expiry.
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
	// TerminationGracePeriod is how long a draining node may wait for pods (PDBs, do-not-disrupt)
	// before they are deleted anyway.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove.
type ConsolidationPolicy string

const (
	ConsolidationPolicyWhenEmpty                ConsolidationPolicy = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
)

// DisruptionReason is why a node is being disrupted; budgets may be scoped to reasons.
type DisruptionReason string

const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
)

// Disruption controls node removal for a pool.
type Disruption struct {
	// ConsolidateAfter is how long a node must stay untouched by pod events before it may be consolidated.
	// +kubebuilder:default:="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitzero"`
	// ConsolidationPolicy: WhenEmpty or WhenEmptyOrUnderutilized.
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized}
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets cap how many nodes may be disrupted at once, optionally per schedule and reason.
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget caps concurrent disruptions. With a schedule it is active for duration after each cron tick.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="'schedule' must be set with 'duration': set both or neither"
type Budget struct {
	// Reasons this budget applies to; empty means all.
	// +kubebuilder:validation:MaxItems=3
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is an absolute count ("5") or a percentage of the pool's nodes ("10%").
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +kubebuilder:default:="10%"
	// +optional
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC) at which the budget becomes active.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget stays active after each schedule tick.
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type=string
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// NodePoolStatus is what Joist observed about the pool.
type NodePoolStatus struct {
	// Resources is the total capacity of the pool's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes in the pool.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// Conditions: Ready, NodeClassReady, ValidationSucceeded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool is a policy for launching and removing nodes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter,shortName={np,nps}
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Nodes",type="integer",JSONPath=".status.nodes"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodePool{}, &NodePoolList{})
}
