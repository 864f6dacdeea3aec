package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/indexes"
)

// conflictRetry is how soon a node patch that lost an optimistic-lock race is retried.
const conflictRetry = 100 * time.Millisecond

// nodeFor returns the Node registered with the claim's provider ID, or nil: the cache's own object,
// read only (a step that changes it works on a copy). A List through the client deep-copied the
// Node on every reconcile of a claim waiting to register or initialize.
func (c *Controller) nodeFor(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	return indexes.CachedNodeForClaim(ctx, c.informers, c.kube, nc)
}

// register syncs the claim's labels and taints onto its Node and adds the termination finalizer, then
// marks the claim Registered. The node stays unschedulable until controllers/nomination releases it.
func (c *Controller) register(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !nc.IsTrue(v1.ConditionTypeLaunched) || nc.IsTrue(v1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeFor(ctx, nc)
	// Taken whether or not the cache shows the Node already: the provider keeps its copy until it
	// is taken, and under load the cache often shows the Node first (~3 MB of Nodes held through
	// make bench-scale's settle window at 1,000 launches).
	written := c.writtenNode(nc)
	launchedNow := false
	if err == nil && node == nil {
		node, err = c.launchedNode(ctx, nc, written)
		launchedNow = node != nil
	}
	if err != nil || node == nil {
		if node == nil && err == nil {
			nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionUnknown, "NodeNotFound", "waiting for the node to register")
		}
		return reconcile.Result{}, err
	}
	stored := node // read only: the cache's own object when the cache shows the Node
	node = node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	node.Labels[v1.NodeRegisteredLabelKey] = "true"
	controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
	node.Spec.Taints = syncTaints(node.Spec.Taints, nc.Spec.Taints)
	if !equality.Semantic.DeepEqual(stored, node) {
		// Taints are a list a merge patch replaces whole, and the node lifecycle controller edits them
		// too: adding one takes an optimistic lock (a conflict just means another look). Labels and
		// finalizers merge key by key in a strategic merge patch, so when the node already has the
		// claim's taints (a kubelet registers with them; KWOK's nodes are created with them) the
		// patch needs no lock, and does not lose the race against the node's status updates (59 to
		// 955 conflicts, each a retry, per 1,000 registrations in make bench-scale under load).
		patch := client.StrategicMergeFrom(stored)
		if len(node.Spec.Taints) != len(stored.Spec.Taints) {
			patch = client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})
		}
		if err := c.kube.Patch(ctx, node, patch); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, fmt.Errorf("syncing node %s for nodeclaim %s: %w", node.Name, nc.Name, err)
		}
	}
	nc.Status.NodeName = node.Name
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	if reason := NotInitializedReason(nc, node); launchedNow && reason != "" {
		// What initialize, next, would write: it reads the cache, which does not show the Node yet.
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionUnknown, "NotInitialized", reason)
	}
	return reconcile.Result{}, nil
}

// launchedNode returns the Node the provider reported creating when it launched the claim in this
// process (status.nodeName of the launch result remembered for launchMemory; KWOK creates its Nodes
// itself), or nil: the provider's own copy of what it wrote when it keeps one (nodeWriter), else
// read from the apiserver. Right after the launch the cache does not show that Node yet: waiting
// for it cost every claim a second reconcile on the lifecycle's queue and one more status write
// (Registered=Unknown, then True).
func (c *Controller) launchedNode(ctx context.Context, nc *v1.NodeClaim, written *corev1.Node) (*corev1.Node, error) {
	name := c.launchedNodeName(nc)
	if name == "" {
		return nil, nil
	}
	if written != nil && written.Spec.ProviderID == nc.Status.ProviderID {
		return written, nil
	}
	node := &corev1.Node{}
	if err := c.live.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if node.Spec.ProviderID != nc.Status.ProviderID {
		return nil, nil
	}
	return node, nil
}

// launchedNodeName is status.nodeName of the claim's launch result remembered for launchMemory, or "".
func (c *Controller) launchedNodeName(nc *v1.NodeClaim) string {
	prev, ok := c.launched.Get(nc.UID)
	if !ok {
		return ""
	}
	return prev.(*v1.NodeClaim).Status.NodeName
}

// writtenNode takes from the provider, when it keeps one (nodeWriter), its copy of the Node the
// claim's launch wrote, or returns nil.
func (c *Controller) writtenNode(nc *v1.NodeClaim) *corev1.Node {
	// Through the provider's decorators (the manager wraps it in cloudprovider/metrics): a plain
	// type assertion on the decorator never found KWOK's copy, so every launch read its Node back
	// from the apiserver and every written Node stayed in the provider until it expired.
	w, ok := cloudprovider.As[nodeWriter](c.cloud)
	if !ok {
		return nil
	}
	name := c.launchedNodeName(nc)
	if name == "" {
		return nil
	}
	return w.WrittenNode(name)
}

// nodeWriter is a provider that writes the Node itself at launch (KWOK) and hands back, once, the
// Node it wrote, as the apiserver returned it. Registering from that copy saves reading the Node
// back: one round trip per launch on a lifecycle worker.
type nodeWriter interface {
	WrittenNode(name string) *corev1.Node
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// syncTaints adds any claim taint the node lacks.
func syncTaints(nodeTaints, claimTaints []corev1.Taint) []corev1.Taint {
	out := append([]corev1.Taint(nil), nodeTaints...)
	for _, want := range claimTaints {
		found := false
		for _, t := range out {
			found = found || t.MatchTaint(&want)
		}
		if !found {
			out = append(out, want)
		}
	}
	return out
}

// initialize marks the claim Initialized once its Node is Ready, its startup taints are gone and the
// extended resources it was launched for are allocatable.
func (c *Controller) initialize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !nc.IsTrue(v1.ConditionTypeRegistered) || nc.IsTrue(v1.ConditionTypeInitialized) {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeFor(ctx, nc)
	if err != nil || node == nil {
		return reconcile.Result{}, err
	}
	if reason := NotInitializedReason(nc, node); reason != "" {
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionUnknown, "NotInitialized", reason)
		return reconcile.Result{}, nil
	}
	// controllers/nomination labels the node in the patch that releases it when nothing else is
	// awaited then; this patch is for nodes that initialize later (startup taints, extended resources).
	if node.Labels[v1.NodeInitializedLabelKey] != "true" {
		stored := node // read only: the cache's own object
		node = node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[v1.NodeInitializedLabelKey] = "true"
		if err := c.kube.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, fmt.Errorf("labeling node %s initialized: %w", node.Name, err)
		}
	}
	nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
	return reconcile.Result{}, nil
}

// NotInitializedReason says why the claim's node is not initialized yet, or "" when it is: Ready,
// released (no karpenter.sh/unregistered taint), none of the claim's startup taints left and the
// extended resources the claim asked for allocatable.
func NotInitializedReason(nc *v1.NodeClaim, node *corev1.Node) string {
	if !nodeReady(node) || hasTaint(node, v1.UnregisteredTaintKey) {
		// One message for both: the node turns Ready before it is released, and a message that
		// changed between the two cost every claim one more status write on the lifecycle's queue.
		return "waiting for the node to turn Ready and be released to the scheduler (karpenter.sh/unregistered taint)"
	}
	for _, st := range nc.Spec.StartupTaints {
		for _, t := range node.Spec.Taints {
			if t.MatchTaint(&st) {
				return fmt.Sprintf("startup taint %q is still on the node", st.ToString())
			}
		}
	}
	for name, q := range nc.Spec.Resources.Requests {
		if isExtended(name) && !q.IsZero() {
			if a, ok := node.Status.Allocatable[name]; !ok || a.IsZero() {
				return fmt.Sprintf("extended resource %s is not allocatable yet", name)
			}
		}
	}
	return ""
}

func isExtended(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
		return false
	}
	return true
}
