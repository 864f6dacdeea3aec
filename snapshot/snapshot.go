// Package snapshot turns Kubernetes objects into the solver's view of a cluster. It is pure: objects
// go in, a Snapshot (the solver.Input plus what acting on the result needs) comes out; no client,
// no clock. The provisioner feeds it from its informer cache, `joist simulate` from YAML files, and
// the tests from what they create, so all of them plan from the same picture: pending pods, nodes and
// in-flight NodeClaims with their bound and nominated pods, NodePools with their instance types and
// remaining limits (NodePool limits and Guardrail cluster limits), DaemonSets and volume zones.
//
// A consolidation planner reads the same Snapshot: Input.Nodes are the nodes with their pods,
// Input.NodePools the pools with offerings and remaining limits, Usage and Headroom what counts
// against the limits.
package snapshot

import (
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/solver"
)

// Cluster is the objects a snapshot is built from. Nil entries are skipped.
type Cluster struct {
	NodePools              []*v1.NodePool
	NodeClaims             []*v1.NodeClaim
	Nodes                  []*corev1.Node
	Pods                   []*corev1.Pod
	DaemonSets             []*appsv1.DaemonSet
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	CSINodes               []*storagev1.CSINode
	Guardrails             []policyv1alpha1.Guardrail
	// Namespaces give their labels to the namespaceSelectors of pod affinity terms.
	Namespaces []*corev1.Namespace
}

// Options are what the caller decides beyond the objects.
type Options struct {
	// InstanceTypes returns what a NodePool may launch (the cloud provider's instance types for its
	// NodeClass). Required.
	InstanceTypes func(*v1.NodePool) ([]*catalog.InstanceType, error)
	// ReadyNodePoolsOnly skips NodePools whose Ready condition is not True (the controller waits for
	// its NodeClass); `joist simulate` plans with every pool.
	ReadyNodePoolsOnly bool
	// LiveClaim reports whether pods nominated to a NodeClaim still count as placed there; nil means
	// every NodeClaim not being deleted.
	LiveClaim func(*v1.NodeClaim) bool
	// Nomination returns the NodeClaim Joist nominated a pending pod to, if any, or for a pod of a
	// node being removed, the claim Joist holds room on for it (heldElsewhere). nominated is the claim
	// the pod's status.nominatedNodeName names: the claim of that Node (whose name differs from the
	// claim's on EC2), or the claim of that name before its Node registers. (live holds the live
	// claims' names). nil means no pod is nominated: every provisionable pod is pending.
	Nomination func(pod *corev1.Pod, nominated string, live map[string]bool) (claim string, ok bool)
	// OwnNomination reports whether Joist remembers writing the pod's status.nominatedNodeName.
	// Without that memory (after a restart, in `joist simulate`) the field's manager tells
	// (NominatedByJoist). Any other nomination of an existing node is the kube-scheduler's
	// (preemption) and launches no node. nil means Joist remembers none.
	OwnNomination func(pod *corev1.Pod) bool
}

// Snapshot is the solver's input plus what acting on its result needs.
type Snapshot struct {
	Input solver.Input
	// NodePools used, by name.
	NodePools map[string]*v1.NodePool
	// Pending are the pods handed to the solver (Input.Pods).
	Pending []*corev1.Pod
	// Preempting are unbound pods the kube-scheduler nominated to an existing node to make room by
	// preemption: no node is launched for them.
	Preempting []*corev1.Pod
	// Usage is, per NodePool, the capacity counted against its limits: every NodeClaim's capacity
	// (its requests before launch) and the capacity of the pool's nodes without a NodeClaim.
	Usage map[string]corev1.ResourceList
	// Headroom is what the Guardrails' cluster limits still allow; Admit applies it to plans.
	Headroom policy.Headroom
}

// Build makes the snapshot of c.
func Build(c Cluster, opts Options) (*Snapshot, error) {
	if opts.InstanceTypes == nil {
		return nil, fmt.Errorf("snapshot: Options.InstanceTypes is required")
	}
	s := &Snapshot{NodePools: map[string]*v1.NodePool{}}
	for _, ds := range c.DaemonSets {
		if ds != nil {
			s.Input.DaemonSets = append(s.Input.DaemonSets, ds)
		}
	}
	claims := liveObjects(c.NodeClaims)
	nodes := liveObjects(c.Nodes)
	claimOfNode := claimsByNode(c.NodeClaims, c.Nodes) // deleted ones too: their claims are not in flight
	hasNode := map[*v1.NodeClaim]bool{}
	for _, nc := range claimOfNode {
		hasNode[nc] = true
	}
	live := map[string]bool{}
	for _, nc := range claims {
		if opts.LiveClaim == nil || opts.LiveClaim(nc) {
			live[nc.Name] = true
		}
	}
	s.usage(c.NodeClaims, nodes, claimOfNode, c.Guardrails)

	instanceTypes := map[string][]*catalog.InstanceType{}
	pools := make([]*v1.NodePool, 0, len(c.NodePools))
	for _, np := range c.NodePools {
		if np != nil && np.DeletionTimestamp.IsZero() && (!opts.ReadyNodePoolsOnly || np.IsTrue(v1.ConditionTypeReady)) {
			pools = append(pools, np)
		}
	}
	sort.SliceStable(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	for _, np := range pools {
		its, err := opts.InstanceTypes(np)
		if err != nil {
			return nil, fmt.Errorf("getting instance types for nodepool %s: %w", np.Name, err)
		}
		instanceTypes[np.Name] = its
		s.NodePools[np.Name] = np
		s.Input.NodePools = append(s.Input.NodePools, solver.NodePoolInput{
			NodePool: np, InstanceTypes: its, Remaining: remaining(np, s.Usage[np.Name], s.Headroom.Remaining),
		})
	}

	csiNodes := map[string]*storagev1.CSINode{}
	for _, cn := range c.CSINodes {
		if cn != nil {
			csiNodes[cn.Name] = cn
		}
	}
	nodeByName := map[string]*corev1.Node{}
	for _, n := range nodes {
		nodeByName[n.Name] = n
	}
	podsByNode := map[string][]*corev1.Pod{}
	nominated := map[string][]*corev1.Pod{} // claim name → pending pods nominated to it
	for _, pod := range c.Pods {
		switch {
		case pod == nil:
		case pod.Spec.NodeName != "":
			if !podkind.IsFinished(pod) {
				podsByNode[pod.Spec.NodeName] = append(podsByNode[pod.Spec.NodeName], pod)
			}
		case !Provisionable(pod):
		default:
			if opts.Nomination != nil {
				target := pod.Status.NominatedNodeName
				if nc := claimOfNode[target]; nc != nil {
					target = nc.Name
				}
				if claim, ok := opts.Nomination(pod, target, live); ok && live[claim] {
					nominated[claim] = append(nominated[claim], pod)
					continue
				}
			}
			own := opts.OwnNomination != nil && opts.OwnNomination(pod)
			if preempting(pod, own, nodeByName, claimOfNode, live) {
				s.Preempting = append(s.Preempting, pod)
				continue
			}
			s.Pending = append(s.Pending, pod)
		}
	}
	s.Input.Pods = s.Pending
	heldElsewhere(podsByNode, nodeByName, claimOfNode, opts, live, nominated)

	for _, node := range nodes {
		if node.Spec.Unschedulable {
			continue
		}
		en := existingNode(node, podsByNode[node.Name])
		en.VolumeLimits = attachLimits(node, csiNodes[node.Name])
		if nc := claimOfNode[node.Name]; nc != nil {
			if !nc.DeletionTimestamp.IsZero() {
				continue // being disrupted: takes no new pods
			}
			en.NodeClaim, en.NodePool = nc.Name, nc.Labels[v1.NodePoolLabelKey]
			en.Pods = append(en.Pods, nominated[nc.Name]...)
			if !nc.IsTrue(v1.ConditionTypeInitialized) {
				// Startup, unregistered and not-ready taints are about to go: plan with the claim's own.
				en.Taints = nc.Spec.Taints
			}
		}
		s.Input.Nodes = append(s.Input.Nodes, en)
	}
	var allocatables allocatableMemo
	for _, nc := range claims {
		if !hasNode[nc] {
			s.Input.Nodes = append(s.Input.Nodes, inFlightNode(nc, instanceTypes[nc.Labels[v1.NodePoolLabelKey]], nominated[nc.Name], &allocatables))
		}
	}
	vx := newVolumeIndex(c)
	s.Input.VolumeZones = volumeZones(s.Pending, vx)
	s.Input.VolumeDrivers = volumeDrivers(c.Pods, vx)
	for _, ns := range c.Namespaces {
		if ns == nil {
			continue
		}
		if s.Input.Namespaces == nil {
			s.Input.Namespaces = map[string]map[string]string{}
		}
		s.Input.Namespaces[ns.Name] = ns.Labels
	}
	return s, nil
}

// liveObjects drops nil objects and those being deleted.
func liveObjects[T interface {
	comparable
	GetDeletionTimestamp() *metav1.Time
}](objs []T) []T {
	var zero T
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if o != zero && o.GetDeletionTimestamp().IsZero() {
			out = append(out, o)
		}
	}
	return out
}

// existingNode describes a node. Its labels are the node's own map, shared read only (the solver and
// the planners never write a snapshot's labels), when it carries the hostname label the kubelet sets;
// only a node without one (a dump, a test) gets a copy with the node's name added as its hostname: a
// copy of every node's labels per batch was garbage at once.
func existingNode(node *corev1.Node, pods []*corev1.Pod) solver.ExistingNode {
	labels := node.Labels
	if _, ok := labels[v1.LabelHostname]; !ok {
		labels = make(map[string]string, len(node.Labels)+1)
		for k, v := range node.Labels {
			labels[k] = v
		}
		labels[v1.LabelHostname] = node.Name // as the kubelet sets it
	}
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		alloc = node.Status.Capacity
	}
	return solver.ExistingNode{
		Name: node.Name, NodePool: node.Labels[v1.NodePoolLabelKey], Labels: labels, Taints: node.Spec.Taints,
		Allocatable: alloc, Pods: pods,
	}
}

// claimsByNode pairs each node with its NodeClaim, by provider ID (or the claim's status.nodeName).
func claimsByNode(claims []*v1.NodeClaim, nodes []*corev1.Node) map[string]*v1.NodeClaim {
	byProviderID := map[string]*v1.NodeClaim{}
	byNodeName := map[string]*v1.NodeClaim{}
	for _, nc := range claims {
		if nc == nil {
			continue
		}
		if nc.Status.ProviderID != "" {
			byProviderID[nc.Status.ProviderID] = nc
		}
		if nc.Status.NodeName != "" {
			byNodeName[nc.Status.NodeName] = nc
		}
	}
	out := map[string]*v1.NodeClaim{}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if nc := byProviderID[n.Spec.ProviderID]; n.Spec.ProviderID != "" && nc != nil {
			out[n.Name] = nc
		} else if nc := byNodeName[n.Name]; nc != nil {
			out[n.Name] = nc
		}
	}
	return out
}
