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
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/podkind"
)

// cluster is one read of what the disruption methods look at. Everything comes from the shared
// informer cache. Pods, nodes, pools, PDBs, namespaces and guardrails are the cache's own objects
// (no copy) and must not be modified; claims are copies (updateStatus writes them) with this loop's
// own recent writes laid over them (ownWrites), so budgets count its deletions even before the cache
// has seen them.
type cluster struct {
	pools      map[string]*v1.NodePool
	claims     []*v1.NodeClaim
	nodes      map[string]*corev1.Node // by name
	podsByNode map[string][]*corev1.Pod
	pdbs       disruptionpolicy.PDBs
	// guardrails and nsLabels confine tenants' pods to their namespace's NodePools in plans.
	guardrails []policyv1alpha1.Guardrail
	nsLabels   map[string]map[string]string
	// pending counts pods waiting for capacity; claimsInFlight, claims not initialized yet.
	pending, claimsInFlight int
	// pendingPods are the pods pending counts.
	pendingPods []*corev1.Pod
	// readVersions and refreshVersions hash every object's resource version as read (fingerprint).
	readVersions, refreshVersions []byte
}

// readOnly lists the cache's objects without copying them; the caller must not modify them.
var readOnly = client.UnsafeDisableDeepCopy

func (c *Controller) readCluster(ctx context.Context) (*cluster, error) {
	var (
		pdbs   policyv1.PodDisruptionBudgetList
		nss    corev1.NamespaceList
		guards policyv1alpha1.GuardrailList
	)
	pods, err := c.cachedPods(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range []client.ObjectList{&pdbs, &nss} {
		if err := c.kube.List(ctx, l, readOnly); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	if err := c.kube.List(ctx, &guards, readOnly); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing guardrails: %w", err) // no CRD installed: no bindings
	}
	cl := &cluster{podsByNode: map[string][]*corev1.Pod{}, pdbs: disruptionpolicy.NewPDBs(pointers(pdbs.Items)), guardrails: guards.Items,
		nsLabels: make(map[string]map[string]string, len(nss.Items))}
	versions := newVersionHash()
	for i := range nss.Items {
		cl.nsLabels[nss.Items[i].Name] = nss.Items[i].Labels
		versions.add("ns", nss.Items[i].Name, nss.Items[i].ResourceVersion, false)
	}
	for i := range pdbs.Items {
		versions.add("pdb", pdbs.Items[i].Namespace+"/"+pdbs.Items[i].Name, pdbs.Items[i].ResourceVersion, false)
	}
	for i := range guards.Items {
		versions.add("guardrail", guards.Items[i].Name, guards.Items[i].ResourceVersion, false)
	}
	for _, p := range pods {
		versions.add("pod", string(p.UID), p.ResourceVersion, !p.DeletionTimestamp.IsZero())
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodPending {
				cl.pending++
				cl.pendingPods = append(cl.pendingPods, p)
			}
			continue
		}
		if podkind.IsFinished(p) {
			continue
		}
		cl.podsByNode[p.Spec.NodeName] = append(cl.podsByNode[p.Spec.NodeName], p)
	}
	cl.readVersions = versions.Sum(nil)
	if err := c.refresh(ctx, cl); err != nil {
		return nil, err
	}
	return cl, nil
}

// cachedPods are the informer cache's pods themselves (cachedobjects: a List, even without deep
// copies, copies every pod into a typed list, 60 MB per pass at 50,000 pods).
func (c *Controller) cachedPods(ctx context.Context) ([]*corev1.Pod, error) {
	return cachedobjects.Objects[corev1.Pod](ctx, c.informers, c.kube, &corev1.PodList{}, nil)
}

// refresh re-reads what this loop's own writes change (pools, claims and nodes); pods and the rest
// are kept from the pass's first read, as the loop does not write them.
func (c *Controller) refresh(ctx context.Context, cl *cluster) error {
	var pools v1.NodePoolList
	// The store's own claims, read only like the nodes: the loop writes copies (updateStatus,
	// restamp, ownWrites.overlay), never these (TestPassLeavesTheCachedClaimsAlone). A deep-copied
	// list cost ~5 KB a claim per refresh.
	claims, err := cachedobjects.Objects[v1.NodeClaim](ctx, c.informers, c.kube, &v1.NodeClaimList{}, nil)
	if err != nil {
		return err
	}
	if err := c.kube.List(ctx, &pools, readOnly); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	// The store's own nodes, read only: no typed-list copy per pass (~1 KB a node).
	nodes, err := cachedobjects.Objects[corev1.Node](ctx, c.informers, c.kube, &corev1.NodeList{}, nil)
	if err != nil {
		return err
	}
	versions := newVersionHash()
	cl.pools = make(map[string]*v1.NodePool, len(pools.Items))
	for i := range pools.Items {
		cl.pools[pools.Items[i].Name] = &pools.Items[i]
		versions.add("pool", pools.Items[i].Name, pools.Items[i].ResourceVersion, false)
	}
	cl.claims = c.writes.overlay(claims, c.clock.Now())
	cl.claimsInFlight = 0
	c.writes.claimVersions(cl.claims, versions)
	for _, nc := range cl.claims {
		if nc.DeletionTimestamp.IsZero() && !nc.IsTrue(v1.ConditionTypeInitialized) {
			cl.claimsInFlight++
		}
	}
	cl.nodes = make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		cl.nodes[n.Name] = n
		versions.add("node", n.Name, n.ResourceVersion, !n.DeletionTimestamp.IsZero())
	}
	cl.refreshVersions = versions.Sum(nil)
	return nil
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

// forgetGone drops the per-claim memory (pod sets, last Blocked event, fresh replacements) of claims
// no longer in the cluster, and replacements no longer fresh, so it does not grow with every node
// ever disrupted.
func (c *Controller) forgetGone(cl *cluster) {
	live := cl.claimNames()
	c.mu.Lock()
	defer c.mu.Unlock()
	keepOnly(c.podSets, live)
	keepOnly(c.blocked, live)
	keepOnly(c.movedOnto, live)
	for r, executed := range c.movedOnto {
		if c.clock.Since(executed) >= freshHold {
			delete(c.movedOnto, r)
		}
	}
}

// claimNames is the set of the claims this pass read.
func (cl *cluster) claimNames() map[string]bool {
	names := make(map[string]bool, len(cl.claims))
	for _, nc := range cl.claims {
		names[nc.Name] = true
	}
	return names
}

// keepOnly deletes from m the entries of claims not in live.
func keepOnly[V any](m map[string]V, live map[string]bool) {
	for name := range m {
		if !live[name] {
			delete(m, name)
		}
	}
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
