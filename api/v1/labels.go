package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// Well-known label keys. The Kubernetes ones are re-exported so callers need one import.
const (
	Group = "karpenter.sh"

	NodePoolLabelKey        = Group + "/nodepool"
	CapacityTypeLabelKey    = Group + "/capacity-type"
	NodeInitializedLabelKey = Group + "/initialized"
	NodeRegisteredLabelKey  = Group + "/registered"

	LabelHostname       = corev1.LabelHostname           // kubernetes.io/hostname
	LabelTopologyZone   = corev1.LabelTopologyZone       // topology.kubernetes.io/zone
	LabelTopologyRegion = corev1.LabelTopologyRegion     // topology.kubernetes.io/region
	LabelInstanceType   = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	LabelArch           = corev1.LabelArchStable         // kubernetes.io/arch
	LabelOS             = corev1.LabelOSStable           // kubernetes.io/os
)

// Capacity types, the values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Well-known annotations.
const (
	DoNotDisruptAnnotationKey                  = Group + "/do-not-disrupt"
	NodePoolHashAnnotationKey                  = Group + "/nodepool-hash"
	NodePoolHashVersionAnnotationKey           = Group + "/nodepool-hash-version"
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
)

// Joist's own labels (not part of Karpenter's API).
const (
	// ProvisioningBatchLabelKey groups the NodeClaims one provisioning batch launched; their nodes are
	// released to the kube-scheduler together (see the NodeClaim lifecycle controller).
	ProvisioningBatchLabelKey = "joist.dev/provisioning-batch"
	// DisruptionCommandAnnotationKey holds, on each NodeClaim a disruption command is taking away, the
	// command's state (JSON: its targets, replacements, start time and this node's planned pods), so
	// a new leader resumes the command rather than releasing its nodes and planning again.
	DisruptionCommandAnnotationKey = "joist.dev/disruption-command"
)

// Finalizers.
const (
	TerminationFinalizer = Group + "/termination"
)

// Taint keys Joist places on nodes it manages.
const (
	DisruptedTaintKey    = Group + "/disrupted"
	UnregisteredTaintKey = Group + "/unregistered"
)

// Extra node selector operators Karpenter v1 accepts beyond the core ones.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

var (
	// DisruptedNoScheduleTaint is applied to a node before Joist drains it.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint keeps pods off a node until Joist has synced its labels and taints.
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}

	// WellKnownLabels are the label keys that NodePool requirements may constrain and that every
	// instance type resolves.
	WellKnownLabels = []string{
		NodePoolLabelKey,
		CapacityTypeLabelKey,
		LabelTopologyZone,
		LabelTopologyRegion,
		LabelInstanceType,
		LabelArch,
		LabelOS,
	}
)
