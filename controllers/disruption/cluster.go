package disruption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/podkind"
)

// cluster is one read of what the disruption methods look at.
type cluster struct {
	pools map[string]*v1.NodePool
	// claims come from the apiserver directly (not the cache), so budgets count this loop's own
	// earlier deletions even when the cache has not seen them yet.
	claims     []*v1.NodeClaim
	nodes      map[string]*corev1.Node // by name
	podsByNode map[string][]*corev1.Pod
	pdbs       []pdb
	// pending counts pods waiting for capacity; claimsInFlight, claims not initialized yet.
	pending, claimsInFlight int
}

type pdb struct {
	obj      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

func (c *Controller) readCluster(ctx context.Context) (*cluster, error) {
	var (
		pools  v1.NodePoolList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
		pdbs   policyv1.PodDisruptionBudgetList
	)
	if err := c.apiReader.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for _, l := range []client.ObjectList{&pools, &nodes, &pods, &pdbs} {
		if err := c.kube.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	cl := &cluster{pools: map[string]*v1.NodePool{}, nodes: map[string]*corev1.Node{}, podsByNode: map[string][]*corev1.Pod{}}
	for i := range pools.Items {
		cl.pools[pools.Items[i].Name] = &pools.Items[i]
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		cl.claims = append(cl.claims, nc)
		if nc.DeletionTimestamp.IsZero() && !nc.IsTrue(v1.ConditionTypeInitialized) {
			cl.claimsInFlight++
		}
	}
	for i := range nodes.Items {
		cl.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodPending {
				cl.pending++
			}
			continue
		}
		if podkind.IsFinished(p) {
			continue
		}
		cl.podsByNode[p.Spec.NodeName] = append(cl.podsByNode[p.Spec.NodeName], p)
	}
	for i := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(pdbs.Items[i].Spec.Selector)
		if err != nil {
			continue
		}
		cl.pdbs = append(cl.pdbs, pdb{obj: &pdbs.Items[i], selector: sel})
	}
	return cl, nil
}

// poolClaims is the pool's claims, and how many are being disrupted: deleting, tainted for
// disruption, or marked Disrupting.
func (cl *cluster) poolCounts(pool string) (total, disrupting int) {
	for _, nc := range cl.claims {
		if nc.Labels[v1.NodePoolLabelKey] != pool {
			continue
		}
		total++
		if cl.disrupting(nc) {
			disrupting++
		}
	}
	return total, disrupting
}

func (cl *cluster) disrupting(nc *v1.NodeClaim) bool {
	if !nc.DeletionTimestamp.IsZero() || nc.IsTrue(v1.ConditionTypeDisrupting) {
		return true
	}
	if n := cl.nodes[nc.Status.NodeName]; n != nil {
		return !n.DeletionTimestamp.IsZero() || hasDisruptedTaint(n)
	}
	return false
}

func hasDisruptedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
			return true
		}
	}
	return false
}

// pdbBlocking returns the PDB covering pod that allows no eviction now, if any.
func (cl *cluster) pdbBlocking(pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	for _, b := range cl.pdbs {
		if b.obj.Namespace == pod.Namespace && !b.selector.Empty() && b.selector.Matches(labels.Set(pod.Labels)) &&
			b.obj.Status.DisruptionsAllowed <= 0 {
			return b.obj
		}
	}
	return nil
}
