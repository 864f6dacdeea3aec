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
// manager's cache, nodes by provider ID (CachedNodeForClaim) and pods by UID (CachedPodByUID) are
// also kept in maps from their informers' events; pods by UID only there.
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

// Lookups of the informers' own objects: they return the store's objects, without the typed-list
// copy a cached List makes. A controller-runtime field index of a namespaced object also keeps every
// value twice (namespaced and across namespaces): for pods by UID that was two one-key sets per
// pod, ~30 MB at 50,000 pods. (A release reads the node of every claim of its batch on each pass:
// the list copies were 13 MB of the 89 MB live heap at the 5,000-pod peak of make bench-scale.)
//
// Pods by UID and nodes by provider ID are plain maps kept from their informers' events (byKey): a
// store index holds a one-key set per object, which with its index entry was most of the 28.6 MB the
// store indexes held at 50,000 pods, and reading one (ByIndex: three map lookups, a set iteration
// and a result slice) was 1.2 of the 23 CPU-s at 5,000 pods, for the release's node of each claim.

// byKey maps each cached object's key to the informer's latest object, kept by an event handler of
// that informer: one map entry per object (~50 bytes).
type byKey[T client.Object] struct {
	mu   sync.RWMutex
	key  func(T) string
	objs map[string]T
}

func newByKey[T client.Object](key func(T) string) *byKey[T] {
	return &byKey[T]{key: key, objs: map[string]T{}}
}

func (m *byKey[T]) update(old, cur any) {
	o, okOld := old.(T)
	c, ok := cur.(T)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if okOld && m.key(o) != m.key(c) {
		m.removeLocked(o)
	}
	if k := m.key(c); k != "" {
		m.objs[k] = c
	}
}

func (m *byKey[T]) remove(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if o, ok := obj.(T); ok {
		m.mu.Lock()
		m.removeLocked(o)
		m.mu.Unlock()
	}
}

// removeLocked drops o's key if it still names o (not another object that took the key since).
func (m *byKey[T]) removeLocked(o T) {
	k := m.key(o)
	if cur, ok := m.objs[k]; ok && cur.GetName() == o.GetName() && cur.GetNamespace() == o.GetNamespace() {
		delete(m.objs, k)
	}
}

func (m *byKey[T]) get(key string) (T, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	o, ok := m.objs[key]
	return o, ok
}

// keyMaps holds the byKey maps of each informer Register was given (keyed by the informer), for
// CachedPodByUID and CachedNodeForClaim, whose callers name the cache, not the map.
var keyMaps sync.Map

// nodeType and podType name the node and pod informers on every store lookup. They are never
// written: a new object per lookup (~900 B) was a quarter of all allocation at 5,000 pods.
var (
	nodeType client.Object = &corev1.Node{}
	podType  client.Object = &corev1.Pod{}
)

// registerStore adds the maps kept from the informers' events.
func registerStore(ctx context.Context, informers ctrlcache.Informers) error {
	if err := addKeyMap(ctx, informers, nodeType, func(n *corev1.Node) string { return n.Spec.ProviderID }); err != nil {
		return err
	}
	return addKeyMap(ctx, informers, podType, func(p *corev1.Pod) string { return string(p.UID) })
}

func addKeyMap[T client.Object](ctx context.Context, informers ctrlcache.Informers, obj client.Object, key func(T) string) error {
	sii, err := store(ctx, informers, obj)
	if err != nil || sii == nil {
		return err
	}
	m := newByKey(key)
	if _, err := sii.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.update(nil, obj) },
		UpdateFunc: m.update,
		DeleteFunc: m.remove,
	}); err != nil {
		return fmt.Errorf("watching %T by key: %w", obj, err)
	}
	keyMaps.Store(sii, m)
	return nil
}

// byKeyMap returns the object of type T under key in obj's informer's map, and whether the map
// exists (false: informers nil, or not registered by Register).
func byKeyMap[T client.Object](ctx context.Context, informers ctrlcache.Informers, obj client.Object, key string) (T, bool, error) {
	var none T
	sii, err := store(ctx, informers, obj)
	if err != nil || sii == nil {
		return none, false, err
	}
	m, ok := keyMaps.Load(sii)
	if !ok {
		return none, false, nil
	}
	o, _ := m.(*byKey[T]).get(key)
	return o, true, nil
}

// CachedNodeForClaim is NodeForClaim returning the cache's own Node (as the informer's handlers last
// saw it), read only. Without the map (informers nil, or not registered by Register) it lists from
// kube without deep copies.
func CachedNodeForClaim(ctx context.Context, informers ctrlcache.Informers, kube client.Reader, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	node, indexed, err := byKeyMap[*corev1.Node](ctx, informers, nodeType, nc.Status.ProviderID)
	if indexed || err != nil {
		return node, err
	}
	return NodeForClaim(ctx, kube, nc, client.UnsafeDisableDeepCopy)
}

// CachedPodByUID returns the pod with the UID, or nil: the cache's own object (as the informer's
// handlers last saw it), read only. Without the map (informers nil, or not registered by Register)
// it lists from kube by the PodUID field index.
func CachedPodByUID(ctx context.Context, informers ctrlcache.Informers, kube client.Reader, uid types.UID) (*corev1.Pod, error) {
	pod, indexed, err := byKeyMap[*corev1.Pod](ctx, informers, podType, string(uid))
	if indexed || err != nil {
		return pod, err
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

// store is obj's informer as a client-go store, or nil when there is none.
func store(ctx context.Context, informers ctrlcache.Informers, obj client.Object) (toolscache.SharedIndexInformer, error) {
	if informers == nil {
		return nil, nil
	}
	inf, err := informers.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("getting the %T informer: %w", obj, err)
	}
	sii, _ := inf.(toolscache.SharedIndexInformer)
	return sii, nil
}
