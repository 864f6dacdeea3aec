// Package indexes registers the cache field indexes the controllers look objects up by. It is called
// once from the controllers' wiring, since registering one index twice is an error.
package indexes

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

const (
	// PodNodeName indexes pods by spec.nodeName.
	PodNodeName = "spec.nodeName"
	// PodUID indexes pods by metadata.uid (only where the indexer is not the manager's cache: see Register).
	PodUID = "metadata.uid"
	// PodControllerUID indexes pods by the UID of their controlling owner (ReplicaSet, StatefulSet…).
	PodControllerUID = "metadata.ownerReferences.controller.uid"
	// NodeProviderID indexes nodes by spec.providerID.
	NodeProviderID = "spec.providerID"
	// NodeClaimNodeName indexes NodeClaims by status.nodeName.
	NodeClaimNodeName = "status.nodeName"
	// NodeClaimProviderID indexes NodeClaims by status.providerID.
	NodeClaimProviderID = "status.providerID"
	// NodeClaimBatch indexes NodeClaims by their provisioning batch label: a label selector on the
	// cache scans every claim, which the release did on each event (29 % of the manager's CPU at
	// 50,000 pods).
	NodeClaimBatch = "metadata.labels." + v1.ProvisioningBatchLabelKey
)

// Register adds every index to the indexer (the manager's field indexer). When the indexer is the
// manager's cache, nodes by provider ID and claims by batch are also indexed in their informers'
// stores (CachedNodeForClaim, CachedClaimsOfBatch), and pods by UID are kept in a map from the pod
// informer's events (CachedPodByUID); pods by UID only there.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodNodeName, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by node name: %w", err)
	}
	if informers, ok := indexer.(ctrlcache.Informers); ok {
		if err := registerStore(ctx, informers); err != nil {
			return err
		}
	} else if err := indexer.IndexField(ctx, &corev1.Pod{}, PodUID, func(o client.Object) []string {
		return []string{string(o.GetUID())}
	}); err != nil {
		return fmt.Errorf("indexing pods by uid: %w", err)
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodControllerUID, func(o client.Object) []string {
		if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
			return []string{string(ref.UID)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by controller uid: %w", err)
	}
	if err := indexer.IndexField(ctx, &corev1.Node{}, NodeProviderID, func(o client.Object) []string {
		return []string{o.(*corev1.Node).Spec.ProviderID}
	}); err != nil {
		return fmt.Errorf("indexing nodes by provider id: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1.NodeClaim{}, NodeClaimProviderID, func(o client.Object) []string {
		return []string{o.(*v1.NodeClaim).Status.ProviderID}
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by provider id: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1.NodeClaim{}, NodeClaimNodeName, func(o client.Object) []string {
		return []string{o.(*v1.NodeClaim).Status.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by node name: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1.NodeClaim{}, NodeClaimBatch, func(o client.Object) []string {
		if batch := o.GetLabels()[v1.ProvisioningBatchLabelKey]; batch != "" {
			return []string{batch}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by provisioning batch: %w", err)
	}
	return nil
}

// NodeForClaim returns the Node registered with the claim's provider ID (through the NodeProviderID
// index), or nil when it has none yet.
func NodeForClaim(ctx context.Context, reader client.Reader, nc *v1.NodeClaim, opts ...client.ListOption) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := reader.List(ctx, nodes, append([]client.ListOption{client.MatchingFields{NodeProviderID: nc.Status.ProviderID}}, opts...)...); err != nil {
		return nil, fmt.Errorf("listing nodes with provider id %s: %w", nc.Status.ProviderID, err)
	}
	if len(nodes.Items) == 0 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}

// Indexes of the informers' own stores, read with ByIndex: they return the store's objects, without
// the typed-list copy a cached List makes. A controller-runtime field index of a namespaced object
// also keeps every value twice (namespaced and across namespaces): for pods by UID that was two
// one-key sets per pod, ~30 MB at 50,000 pods. (A release reads the node of every claim of its batch
// on each pass: the list copies were 13 MB of the 89 MB live heap at the 5,000-pod peak of make
// bench-scale.)
//
// Pods by UID are a plain map kept from the pod informer's events instead (podUIDs): a store index
// holds a one-key set per pod, which with its index entry was most of the 28.6 MB the store
// indexes held at 50,000 pods.
const nodeProviderIDStore = "joist.dev/node-provider-id"

// nodeClaimBatchStore indexes the claim informer's store by provisioning batch (NodeClaimBatch read
// without the list copy: CachedClaimsOfBatch).
const nodeClaimBatchStore = "joist.dev/nodeclaim-batch"

// podUIDs maps each cached pod's UID to the pod informer's latest object, kept by an event handler
// of that informer: one map entry per pod (~50 bytes) where a store index held a set per pod.
type podUIDs struct {
	mu   sync.RWMutex
	pods map[types.UID]*corev1.Pod
}

func (m *podUIDs) set(obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		m.mu.Lock()
		m.pods[p.UID] = p
		m.mu.Unlock()
	}
}

func (m *podUIDs) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		m.mu.Lock()
		delete(m.pods, p.UID)
		m.mu.Unlock()
	}
}

func (m *podUIDs) get(uid types.UID) *corev1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pods[uid]
}

// uidMaps holds the podUIDs of each pod informer Register was given (keyed by the informer), for
// CachedPodByUID, whose callers name the cache, not the map.
var uidMaps sync.Map

// nodeType and podType name the node and pod informers on every store lookup. They are never
// written: a new object per lookup (~900 B) was a quarter of all allocation at 5,000 pods.
var (
	nodeType  client.Object = &corev1.Node{}
	podType   client.Object = &corev1.Pod{}
	claimType client.Object = &v1.NodeClaim{}
)

// registerStore adds the indexes read from the informers' stores.
func registerStore(ctx context.Context, informers ctrlcache.Informers) error {
	if err := addStoreIndex(ctx, informers, nodeType, nodeProviderIDStore, func(obj any) []string {
		if n, ok := obj.(*corev1.Node); ok && n.Spec.ProviderID != "" {
			return []string{n.Spec.ProviderID}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := addStoreIndex(ctx, informers, claimType, nodeClaimBatchStore, func(obj any) []string {
		if nc, ok := obj.(*v1.NodeClaim); ok {
			if batch := nc.Labels[v1.ProvisioningBatchLabelKey]; batch != "" {
				return []string{batch}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	sii, err := store(ctx, informers, podType)
	if err != nil || sii == nil {
		return err
	}
	m := &podUIDs{pods: map[types.UID]*corev1.Pod{}}
	if _, err := sii.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    m.set,
		UpdateFunc: func(_, obj any) { m.set(obj) },
		DeleteFunc: m.remove,
	}); err != nil {
		return fmt.Errorf("watching pods by uid: %w", err)
	}
	uidMaps.Store(sii, m)
	return nil
}

func addStoreIndex(ctx context.Context, informers ctrlcache.Informers, obj client.Object, name string, values func(any) []string) error {
	sii, err := store(ctx, informers, obj)
	if err != nil || sii == nil {
		return err
	}
	if err := sii.AddIndexers(toolscache.Indexers{name: func(obj any) ([]string, error) { return values(obj), nil }}); err != nil {
		return fmt.Errorf("adding store index %s: %w", name, err)
	}
	return nil
}

// byStoreIndex returns the store's first object of type PT under value, and whether the store has
// the index at all (false: informers nil, or the index was not registered).
func byStoreIndex[PT client.Object](ctx context.Context, informers ctrlcache.Informers, obj client.Object, name, value string) (PT, bool, error) {
	var none PT
	sii, err := store(ctx, informers, obj)
	if err != nil || sii == nil || sii.GetIndexer().GetIndexers()[name] == nil {
		return none, false, err
	}
	objs, err := sii.GetIndexer().ByIndex(name, value)
	if err != nil {
		return none, true, fmt.Errorf("reading store index %s: %w", name, err)
	}
	for _, o := range objs {
		if typed, ok := o.(PT); ok {
			return typed, true, nil
		}
	}
	return none, true, nil
}

// CachedNodeForClaim is NodeForClaim returning the cache's own Node, read only. A registered
// claim's node is read by its name (status.nodeName: one store read) when that node carries the
// claim's provider ID, else through the provider-ID store index. Without the store index (informers
// nil, or not indexed by Register) it lists from kube without deep copies.
//
// The release reads the node of every claim of its batch on each event: the index read (its set,
// the returned list, the informer looked up by type each time) was 5.6 % of the manager's CPU at
// 5,000 pods.
func CachedNodeForClaim(ctx context.Context, informers ctrlcache.Informers, kube client.Reader, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	if nc.Status.NodeName != "" {
		sii, err := store(ctx, informers, nodeType)
		if err != nil {
			return nil, err
		}
		if sii != nil {
			if o, ok, _ := sii.GetIndexer().GetByKey(nc.Status.NodeName); ok {
				if n, ok := o.(*corev1.Node); ok && n.Spec.ProviderID == nc.Status.ProviderID {
					return n, nil
				}
			}
		}
	}
	node, indexed, err := byStoreIndex[*corev1.Node](ctx, informers, nodeType, nodeProviderIDStore, nc.Status.ProviderID)
	if indexed || err != nil {
		return node, err
	}
	return NodeForClaim(ctx, kube, nc, client.UnsafeDisableDeepCopy)
}

// CachedClaimsOfBatch returns the NodeClaims of a provisioning batch (NodeClaimBatch): the cache's
// own objects, read only, in no order. Without the store index (informers nil, or not indexed by
// Register) it lists from kube by the field index without deep copies.
//
// The release reads its batch's claims on each node and claim event: a List's typed copy of every
// claim of the batch (meta.SetList) was 18 % of all the manager's allocation at 5,000 pods.
func CachedClaimsOfBatch(ctx context.Context, informers ctrlcache.Informers, kube client.Reader, batch string) ([]*v1.NodeClaim, error) {
	sii, err := store(ctx, informers, claimType)
	if err != nil {
		return nil, err
	}
	if sii != nil && sii.GetIndexer().GetIndexers()[nodeClaimBatchStore] != nil {
		objs, err := sii.GetIndexer().ByIndex(nodeClaimBatchStore, batch)
		if err != nil {
			return nil, fmt.Errorf("reading store index %s: %w", nodeClaimBatchStore, err)
		}
		out := make([]*v1.NodeClaim, 0, len(objs))
		for _, o := range objs {
			if nc, ok := o.(*v1.NodeClaim); ok {
				out = append(out, nc)
			}
		}
		return out, nil
	}
	list := &v1.NodeClaimList{}
	if err := kube.List(ctx, list, client.MatchingFields{NodeClaimBatch: batch}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of batch %s: %w", batch, err)
	}
	out := make([]*v1.NodeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// CachedPodByUID returns the pod with the UID, or nil: the cache's own object (as the informer's
// handlers last saw it), read only. Without the map (informers nil, or not registered by Register)
// it lists from kube by the PodUID field index.
func CachedPodByUID(ctx context.Context, informers ctrlcache.Informers, kube client.Reader, uid types.UID) (*corev1.Pod, error) {
	sii, err := store(ctx, informers, podType)
	if err != nil {
		return nil, err
	}
	if sii != nil {
		if m, ok := uidMaps.Load(sii); ok {
			return m.(*podUIDs).get(uid), nil
		}
	}
	pods := &corev1.PodList{}
	if err := kube.List(ctx, pods, client.MatchingFields{PodUID: string(uid)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("finding pod %s: %w", uid, err)
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	return &pods.Items[0], nil
}

// store is obj's informer as a client-go store, or nil when there is none. It is looked up once
// per cache and object type and then read from stores: GetInformer finds the type's kind through
// the scheme on every call.
func store(ctx context.Context, informers ctrlcache.Informers, obj client.Object) (toolscache.SharedIndexInformer, error) {
	if informers == nil {
		return nil, nil
	}
	key := storeKey{informers: informers, obj: obj}
	if sii, ok := stores.Load(key); ok {
		return sii.(toolscache.SharedIndexInformer), nil
	}
	inf, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("getting the %T informer: %w", obj, err)
	}
	sii, _ := inf.(toolscache.SharedIndexInformer)
	if sii != nil {
		stores.Store(key, sii)
	}
	return sii, nil
}

// storeKey names one informer: the cache and the (package-level, never written) object its type
// is read from.
type storeKey struct {
	informers ctrlcache.Informers
	obj       client.Object
}

// stores holds each informer store found (storeKey to toolscache.SharedIndexInformer). A cache
// keeps its informers for its lifetime, so an entry never goes stale; a stopped test cache's
// entries are a few pointers.
var stores sync.Map
