// Package solver is Joist's scheduling simulation and bin-packer. It is pure: an Input snapshot goes
// in, a Result comes out; no API client, no clock, no I/O, and the same input always gives the same
// result.
package solver

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// Input is everything the solver needs to place a batch of pending pods.
type Input struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// NodePools with the instance types each may launch and its remaining limits.
	NodePools []NodePoolInput
	// Nodes are existing nodes and in-flight NodeClaims that pods may be placed on.
	Nodes []ExistingNode
	// DaemonSets whose pods would run on every new node they tolerate and select.
	DaemonSets []*appsv1.DaemonSet
	// VolumeZones maps "namespace/persistentVolumeClaimName" to the zones its bound volume lives in.
	VolumeZones map[string][]string
	// VolumeDrivers maps "namespace/persistentVolumeClaimName" to the CSI driver that attaches its
	// volume. A node attaches each volume once, however many of its pods use it, and at most its
	// ExistingNode.VolumeLimits per driver.
	VolumeDrivers map[string]string
	// Namespaces maps a namespace's name to its labels, for the namespaceSelector of pod affinity
	// terms. A namespace it does not list is taken to carry only kubernetes.io/metadata.name.
	Namespaces map[string]map[string]string
}

// NodePoolInput is a NodePool and what it may launch.
type NodePoolInput struct {
	NodePool      *v1.NodePool
	InstanceTypes []*catalog.InstanceType
	// Remaining is limits less current usage per resource; nil means unlimited.
	Remaining corev1.ResourceList
}

// ExistingNode is a node (or an in-flight NodeClaim not yet registered) that can take pods.
type ExistingNode struct {
	Name string
	// NodeClaim is the claim's name for Joist-managed capacity; InFlight when no Node exists yet.
	NodeClaim string
	InFlight  bool
	NodePool  string
	Labels    map[string]string
	Taints    []corev1.Taint
	// Allocatable is the node's allocatable (for an in-flight claim, the launched type's allocatable).
	Allocatable corev1.ResourceList
	// Pods already bound (or nominated) to it; their requests are used and they count for topology.
	Pods []*corev1.Pod
	// VolumeLimits is, per CSI driver, how many volumes the node can attach (its CSINode's
	// allocatable count); a driver absent, or a nil map, is unlimited.
	VolumeLimits map[string]int
}

// Result is the solver's plan.
type Result struct {
	// ExistingPlacements lists pods placed on existing nodes or in-flight claims.
	ExistingPlacements []ExistingPlacement
	// NewNodeClaims are the nodes to launch, cheapest plan the solver found.
	NewNodeClaims []NodeClaimPlan
	// Unschedulable pods, each with a human-readable reason naming the constraint.
	Unschedulable []Unschedulable
	// CostPerHour is the summed price of NewNodeClaims' chosen offerings.
	CostPerHour float64
	// LowerBoundPerHour is the LP-relaxation bound on the cost of the placed demand.
	LowerBoundPerHour float64
	// Passes reports the passes the plan went through, in order: which ran, their effect on
	// cost, their LP work and whether a work budget cut one short.
	Passes []PassReport
}

// ExistingPlacement is pods placed on one existing node or in-flight claim.
type ExistingPlacement struct {
	Node string
	Pods []*corev1.Pod
}

// NodeClaimPlan is one node to launch.
type NodeClaimPlan struct {
	NodePool string
	// Requirements are the pool's requirements narrowed by the pods placed on the node; they admit
	// every entry of InstanceTypeOptions.
	Requirements []v1.NodeSelectorRequirementWithMinValues
	// InstanceTypeOptions that hold all the pods, cheapest first.
	InstanceTypeOptions []*catalog.InstanceType
	// InstanceType, Offering: what a launch picks (the cheapest available offering of the options).
	InstanceType *catalog.InstanceType
	Offering     catalog.Offering
	// Pods assigned to the node.
	Pods []*corev1.Pod
	// Requests summed over Pods plus DaemonSet overhead.
	Requests corev1.ResourceList
}

// Unschedulable is a pod the solver could not place and why.
type Unschedulable struct {
	Pod *corev1.Pod
	// Reason is a human-readable sentence naming the constraint, e.g. for an event.
	Reason string
	// Cause is the kind of constraint that stopped the pod, for callers that act on it.
	Cause Cause
	// NodePool is the pool the cause names: for CauseLimits the NodePool whose limits ran out.
	NodePool string
}

// Cause is the kind of constraint that kept a pod from being placed: the furthest check its best
// placement attempt reached and failed.
type Cause string

const (
	// CauseInvalidSpec: the pod's scheduling constraints cannot be evaluated (an unparsable node
	// selector, required node affinity without usable terms, an invalid label selector).
	CauseInvalidSpec Cause = "InvalidSpec"
	// CauseVolumeZones: the zones the pod's volumes pin do not overlap.
	CauseVolumeZones Cause = "VolumeZones"
	// CauseTaints: no NodePool (and no existing node) tolerated by the pod.
	CauseTaints Cause = "Taints"
	// CauseRequirements: node selection, NodePool requirements or minValues admit no instance type.
	CauseRequirements Cause = "Requirements"
	// CauseResources: no instance type (or existing node) has room for the pod's requests.
	CauseResources Cause = "Resources"
	// CauseLimits: the pod fits a NodePool, but launching a node would exceed the pool's remaining
	// limits; NodePool names it.
	CauseLimits Cause = "Limits"
	// CauseTopology: topology spread, pod affinity or anti-affinity leave no domain for the pod.
	CauseTopology Cause = "Topology"
	// CauseDomainLimit: the NodePools and nodes span more zones (or capacity types) than the
	// solver tells apart (64) and the pod's placement depends on its zone (or capacity type).
	CauseDomainLimit Cause = "DomainLimit"
	// CauseNoCapacity: nothing at all could take the pod (no NodePool and no fitting node).
	CauseNoCapacity Cause = "NoCapacity"
)
