package disruption

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
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
	pdbs       disruptionpolicy.PDBs
	// guardrails and nsLabels confine tenants' pods to their namespace's NodePools in plans.
	guardrails []policyv1alpha1.Guardrail
	nsLabels   map[string]map[string]string
	// pending counts pods waiting for capacity; claimsInFlight, claims not initialized yet.
	pending, claimsInFlight int
}

func (c *Controller) readCluster(ctx context.Context) (*cluster, error) {
	var (
		pools  v1.NodePoolList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
		pdbs   policyv1.PodDisruptionBudgetList
		nss    corev1.NamespaceList
		guards policyv1alpha1.GuardrailList
	)
	if err := c.apiReader.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for _, l := range []client.ObjectList{&pools, &nodes, &pods, &pdbs, &nss} {
		if err := c.kube.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	if err := c.kube.List(ctx, &guards); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing guardrails: %w", err) // no CRD installed: no bindings
	}
	cl := &cluster{pools: map[string]*v1.NodePool{}, nodes: map[string]*corev1.Node{}, podsByNode: map[string][]*corev1.Pod{},
		pdbs: disruptionpolicy.NewPDBs(pointers(pdbs.Items)), guardrails: guards.Items, nsLabels: map[string]map[string]string{}}
	for i := range nss.Items {
		cl.nsLabels[nss.Items[i].Name] = nss.Items[i].Labels
	}
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
	return disruptionpolicy.Disrupting(nc, cl.nodes[nc.Status.NodeName])
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
