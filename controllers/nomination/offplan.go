package nomination

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// releasedNodes maps the claims released to the kube-scheduler to their nodes and back.
type releasedNodes struct {
	mu     sync.Mutex
	node   map[string]string // claim → node
	claims map[string]string // node → claim
}

func newReleasedNodes() *releasedNodes {
	return &releasedNodes{node: map[string]string{}, claims: map[string]string{}}
}

func (r *releasedNodes) add(claim, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.node[claim], r.claims[node] = node, claim
}

func (r *releasedNodes) forget(claim string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.claims, r.node[claim])
	delete(r.node, claim)
}

func (r *releasedNodes) nodeOf(claim string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.node[claim]
}

func (r *releasedNodes) claimOf(node string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.claims[node]
}

// swapOffPlan handles a pod the kube-scheduler bound to another released node than the one it was
// planned for. It took room planned for a pod of that node, and left its own slot on its planned
// node free. A still-pending pod of the same workload planned for the node it landed on is
// identical to it, so that pod's nomination moves to the vacated slot at once: without the swap the
// displaced pod would be turned away, wait out RejectionGrace and be planned again — by then the
// snapshot can count the room it needs as taken and buy a node for it although the plan's room
// still exists. (Pods of other workloads displaced this way still go through rejection.) The
// vacated slot may be on a node not released yet (nodes are released as they turn Ready): the
// swapped pod is then nominated to it at that node's release.
func (c *Controller) swapOffPlan(ctx context.Context, pod *corev1.Pod) {
	planned, ok := c.store.ClaimOf(pod.UID)
	if !ok {
		return
	}
	plannedNode, landedClaim := c.released.nodeOf(planned), c.released.claimOf(pod.Spec.NodeName)
	owner := ownerOf(pod)
	if plannedNode == pod.Spec.NodeName || landedClaim == "" || landedClaim == planned || owner == "" {
		return
	}
	for _, uid := range c.store.PodsOf(landedClaim) {
		other, err := c.podByUID(ctx, uid)
		if err != nil || other == nil || other.Spec.NodeName != "" || ownerOf(other) != owner {
			continue
		}
		c.store.Nominate(planned, uid)
		c.queue.Add(uid) // handle writes its nomination to the planned node, once that is released
		if c.opts.PinPlannedPods {
			c.pinQueue.Add(uid) // and, pinning, its toleration of that node's pin
		}
		log.FromContext(ctx).V(1).Info("pod bound off-plan: a pod of its workload takes its planned slot",
			"pod", klog.KObj(pod), "node", pod.Spec.NodeName, "plannedClaim", planned, "plannedNode", plannedNode, "swapped", klog.KObj(other))
		return
	}
}
