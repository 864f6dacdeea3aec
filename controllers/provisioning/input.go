package provisioning

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/controllers/cachedobjects"
	"github.com/joist-dev/joist/snapshot"
)

// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=get;list;watch

// snapshot lists the cluster from the informer cache and builds the solver's input with the one
// snapshot builder `joist simulate` and the tests use; only the nominations are the provisioner's own.
func (p *Provisioner) snapshot(ctx context.Context) (*snapshot.Snapshot, error) {
	c, err := p.listCluster(ctx)
	if err != nil {
		return nil, err
	}
	p.nominations.Sweep(c.NodeClaims, c.Pods) // the callbacks below only read
	return snapshot.Build(c, snapshot.Options{
		InstanceTypes: func(np *v1.NodePool) ([]*catalog.InstanceType, error) {
			return p.cloud.GetInstanceTypes(ctx, np)
		},
		ReadyNodePoolsOnly: true,
		LiveClaim:          p.nominations.LiveClaim,
		Nomination:         p.nominations.NominationOf,
		OwnNomination:      p.nominations.Own,
	})
}

// listCluster reads every object a snapshot needs from the cache.
func (p *Provisioner) listCluster(ctx context.Context) (snapshot.Cluster, error) {
	var (
		c     snapshot.Cluster
		pools v1.NodePoolList
		dss   appsv1.DaemonSetList
		pvcs  corev1.PersistentVolumeClaimList
		pvs   corev1.PersistentVolumeList
		scs   storagev1.StorageClassList
		csis  storagev1.CSINodeList
		nss   corev1.NamespaceList
	)
	for _, l := range []client.ObjectList{&pools, &dss, &pvcs, &pvs, &scs, &csis, &nss} {
		if err := p.kube.List(ctx, l); err != nil {
			return c, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	// Pods, nodes and claims are most of the cache (50,000 pods are ~170 MB): a deep copy per
	// snapshot doubled the live heap while a batch was planned. Nothing downstream writes them (the
	// snapshot and the solver only read; nominations are patches; a launch builds its claim from the
	// pool, never from another claim), so they are the cache's own objects, read from the store (a
	// List's typed copy of 50,000 pods was 31 MB of the heap at its peak, the deep-copied claims of
	// 5,000 nodes 24 MB). Pools stay copies: a created claim shares slices with its pool's template,
	// and the create decodes the apiserver's answer into them.
	var err error
	if c.NodeClaims, err = cachedobjects.Objects[v1.NodeClaim](ctx, p.cache, p.kube, &v1.NodeClaimList{}, nil); err != nil {
		return c, err
	}
	if c.Nodes, err = cachedobjects.Objects[corev1.Node](ctx, p.cache, p.kube, &corev1.NodeList{}, nil); err != nil {
		return c, err
	}
	if c.Pods, err = cachedobjects.Objects[corev1.Pod](ctx, p.cache, p.kube, &corev1.PodList{}, nil); err != nil {
		return c, err
	}
	guardrails := &policyv1alpha1.GuardrailList{}
	if err := p.kube.List(ctx, guardrails); err != nil && !meta.IsNoMatchError(err) {
		return c, fmt.Errorf("listing guardrails: %w", err) // no CRD installed: no ceiling
	}
	c.NodePools = pointers(pools.Items)
	c.DaemonSets = pointers(dss.Items)
	c.PersistentVolumeClaims = pointers(pvcs.Items)
	c.PersistentVolumes = pointers(pvs.Items)
	c.StorageClasses = pointers(scs.Items)
	c.CSINodes = pointers(csis.Items)
	c.Namespaces = pointers(nss.Items)
	c.Guardrails = guardrails.Items
	return c, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
