package nodeclaim

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/snapshot"
)

// conflictRetry is how soon a node patch that lost an optimistic-lock race is retried.
const conflictRetry = 100 * time.Millisecond

// nodeFor returns the Node registered with the claim's provider ID, or nil.
func (c *Controller) nodeFor(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.kube.List(ctx, nodes, client.MatchingFields{indexes.NodeProviderID: nc.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("listing nodes with provider id %s: %w", nc.Status.ProviderID, err)
	}
	if len(nodes.Items) == 0 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}

// register syncs the claim's labels and taints onto its Node and adds the termination finalizer, then
// marks the claim Registered. The node stays unschedulable until release.
func (c *Controller) register(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !nc.IsTrue(v1.ConditionTypeLaunched) || nc.IsTrue(v1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeFor(ctx, nc)
	if err != nil || node == nil {
		if node == nil && err == nil {
			nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionUnknown, "NodeNotFound", "waiting for the node to register")
		}
		return reconcile.Result{}, err
	}
	stored := node.DeepCopy()
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
		// Optimistic lock: taints are a list a merge patch replaces whole, and the node lifecycle
		// controller edits them too. A conflict just means another look.
		if err := c.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, fmt.Errorf("syncing node %s for nodeclaim %s: %w", node.Name, nc.Name, err)
		}
	}
	nc.Status.NodeName = node.Name
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	return reconcile.Result{}, nil
}

// release makes registered nodes schedulable, a provisioning batch at a time: once every node of the
// claim's batch is Ready and free of the node lifecycle controller's not-ready taint, the pods planned
// for each get status.nominatedNodeName = that node, and only then are the karpenter.sh/unregistered
// taints lifted, all together. The kube-scheduler tries a pod's nominated node first and holds room
// there for it, so pods land where the solver put them rather than on whichever node turned
// schedulable first. (Nominating any earlier does not stick: the scheduler clears the field each time
// it finds no node for a pod.) A batch whose slowest node is not ready within BatchReleaseTimeout is
// released node by node.
func (c *Controller) release(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !nc.IsTrue(v1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeFor(ctx, nc)
	if err != nil || node == nil || !hasTaint(node, v1.UnregisteredTaintKey) {
		return reconcile.Result{}, err
	}
	if !releasable(node) {
		return reconcile.Result{}, nil // the Node's next update requeues the claim
	}
	batch, waitFor, err := c.batchNodes(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if waitFor > 0 {
		if left := nc.CreationTimestamp.Add(c.opts.BatchReleaseTimeout).Sub(c.clock.Now()); left > 0 {
			return reconcile.Result{RequeueAfter: min(left, time.Second)}, nil
		}
		batch = map[string]*corev1.Node{nc.Name: node}
	}
	// One worker releases a batch; the others come back and find their node released.
	batchKey := nc.Labels[v1.ProvisioningBatchLabelKey]
	if batchKey == "" {
		batchKey = nc.Name
	}
	if !c.nominations.StartRelease(batchKey) {
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	defer c.nominations.FinishRelease(batchKey)
	start := c.clock.Now()
	nodeOfClaim := map[string]string{}
	for claim, n := range batch {
		nodeOfClaim[claim] = n.Name
	}
	written, err := c.nominate(ctx, nodeOfClaim)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.awaitNominationsSeen(ctx, nodeOfClaim)
	for claim := range batch {
		c.nominations.MarkReleased(claim, c.clock.Now())
	}
	log.FromContext(ctx).Info("releasing nodes to the scheduler", "nodes", len(batch), "nominationsWritten", written, "nominating", c.clock.Since(start).String())
	g, gctx := errgroup.WithContext(ctx)
	for _, n := range batch {
		if hasTaint(n, v1.UnregisteredTaintKey) {
			g.Go(func() error { return c.liftUnregisteredTaint(gctx, n) })
		}
	}
	if err := g.Wait(); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// liftUnregisteredTaint removes the karpenter.sh/unregistered taint with a JSON patch that first
// tests the taints it replaces. Taints are a list a patch replaces whole, and the node lifecycle
// controller edits them too; an optimistic lock on the whole Node would also fail on every status
// heartbeat. A failed test comes back as Invalid.
func (c *Controller) liftUnregisteredTaint(ctx context.Context, n *corev1.Node) error {
	taints := n.Spec.Taints
	if taints == nil {
		taints = []corev1.Taint{}
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/spec/taints", "value": taints},
		{"op": "replace", "path": "/spec/taints", "value": withoutTaint(n.Spec.Taints, v1.UnregisteredTaintKey)},
	})
	if err != nil {
		return err
	}
	if err := c.kube.Patch(ctx, n, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("lifting the unregistered taint from node %s: %w", n.Name, err)
	}
	return nil
}

// batchNodes returns the nodes of the claim's provisioning batch by claim name, and how many of the
// batch's live claims have no releasable node yet.
func (c *Controller) batchNodes(ctx context.Context, nc *v1.NodeClaim) (map[string]*corev1.Node, int, error) {
	siblings := []v1.NodeClaim{*nc}
	if batch := nc.Labels[v1.ProvisioningBatchLabelKey]; batch != "" {
		list := &v1.NodeClaimList{}
		if err := c.kube.List(ctx, list, client.MatchingLabels{v1.ProvisioningBatchLabelKey: batch}); err != nil {
			return nil, 0, fmt.Errorf("listing nodeclaims of batch %s: %w", batch, err)
		}
		siblings = list.Items
	}
	nodes, waiting := map[string]*corev1.Node{}, 0
	for i := range siblings {
		s := &siblings[i]
		if !s.DeletionTimestamp.IsZero() {
			continue
		}
		node, err := c.nodeFor(ctx, s)
		if err != nil {
			return nil, 0, err
		}
		if node == nil || !releasable(node) {
			waiting++
			continue
		}
		nodes[s.Name] = node
	}
	return nodes, waiting, nil
}

// releasable reports whether a node is ready for pods but for the unregistered taint.
func releasable(node *corev1.Node) bool {
	return nodeReady(node) && !hasTaint(node, corev1.TaintNodeNotReady) && !hasTaint(node, corev1.TaintNodeUnreachable)
}

// nominate points the still-pending pods planned for each claim (key) at its node (value), all
// claims' pods at once. It returns how many nominations it had to write.
func (c *Controller) nominate(ctx context.Context, nodeOfClaim map[string]string) (int, error) {
	var written atomic.Int32
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(nominationParallelism)
	for claim, node := range nodeOfClaim {
		for _, uid := range c.nominations.PodsOf(claim) {
			g.Go(func() error {
				pod, err := c.podByUID(gctx, uid)
				if err != nil || pod == nil || pod.Spec.NodeName != "" {
					return err
				}
				if pod.Status.NominatedNodeName == node || c.nominations.WrittenSince(pod.UID, pod.ResourceVersion) {
					return nil // nominated, or our nomination is newer than the cache's copy
				}
				patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, node)))
				if err := c.kube.Status().Patch(gctx, pod, patch, client.FieldOwner(snapshot.NominationFieldManager)); err != nil {
					return client.IgnoreNotFound(fmt.Errorf("nominating pod %s to node %s: %w", client.ObjectKeyFromObject(pod), node, err))
				}
				c.nominations.Written(pod.UID, pod.ResourceVersion)
				written.Add(1)
				return nil
			})
		}
	}
	err := g.Wait()
	return int(written.Load()), err
}

// awaitNominationsSeen waits, up to nominationsSeenTimeout, until the informer cache shows every
// nomination just written. The kube-scheduler watches pods and nodes on separate streams: lifting
// the taints while it has yet to see some nominations lets it place pods into room held for others,
// which strands a planned pod. Our cache, fed by the same apiserver, is the nearest proof we have
// that the nominations are out.
func (c *Controller) awaitNominationsSeen(ctx context.Context, nodeOfClaim map[string]string) {
	// A timeout just means releasing without that proof; the error says nothing more.
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, nominationsSeenTimeout, true, func(ctx context.Context) (bool, error) {
		for claim := range nodeOfClaim {
			for _, uid := range c.nominations.PodsOf(claim) {
				if pod, err := c.podByUID(ctx, uid); err == nil && pod != nil && c.nominations.WrittenSince(uid, pod.ResourceVersion) {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// nominationsSeenTimeout bounds awaitNominationsSeen.
const nominationsSeenTimeout = 2 * time.Second

// nominationParallelism bounds the nomination patches in flight.
const nominationParallelism = 128

func (c *Controller) podByUID(ctx context.Context, uid types.UID) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.kube.List(ctx, pods, client.MatchingFields{indexes.PodUID: string(uid)}); err != nil {
		return nil, fmt.Errorf("finding pod %s: %w", uid, err)
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	return &pods.Items[0], nil
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func withoutTaint(taints []corev1.Taint, key string) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints))
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
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
	if reason := notInitializedReason(nc, node); reason != "" {
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionUnknown, "NotInitialized", reason)
		return reconcile.Result{}, nil
	}
	if node.Labels[v1.NodeInitializedLabelKey] != "true" {
		stored := node.DeepCopy()
		node.Labels[v1.NodeInitializedLabelKey] = "true"
		if err := c.kube.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, fmt.Errorf("labeling node %s initialized: %w", node.Name, err)
		}
	}
	nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
	return reconcile.Result{}, nil
}

func notInitializedReason(nc *v1.NodeClaim, node *corev1.Node) string {
	if !nodeReady(node) {
		return "node is not Ready"
	}
	if hasTaint(node, v1.UnregisteredTaintKey) {
		return "node is not released yet (karpenter.sh/unregistered taint)"
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
