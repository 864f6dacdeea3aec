// Package indexes registers the cache field indexes the controllers look objects up by. It is called
// once from the controllers' wiring, since registering one index twice is an error.
package indexes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

const (
	// PodNodeName indexes pods by spec.nodeName.
	PodNodeName = "spec.nodeName"
	// PodUID indexes pods by metadata.uid.
	PodUID = "metadata.uid"
	// PodControllerUID indexes pods by the UID of their controlling owner (ReplicaSet, StatefulSet…).
	PodControllerUID = "metadata.ownerReferences.controller.uid"
	// NodeProviderID indexes nodes by spec.providerID.
	NodeProviderID = "spec.providerID"
	// NodeClaimNodeName indexes NodeClaims by status.nodeName.
	NodeClaimNodeName = "status.nodeName"
	// NodeClaimProviderID indexes NodeClaims by status.providerID.
	NodeClaimProviderID = "status.providerID"
)

// Register adds every index to the indexer (the manager's field indexer).
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodNodeName, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return fmt.Errorf("indexing pods by node name: %w", err)
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodUID, func(o client.Object) []string {
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

// nodeProviderIDStore is the node informer's own index by spec.providerID, read with ByIndex: it
// returns the store's objects, without the typed-list copy a cached List makes. (A release reads the
// node of every claim of its batch on each pass: those copies were 13 MB of the 89 MB live heap at
// the 5,000-pod peak of make bench-scale.)
const nodeProviderIDStore = "joist.dev/node-provider-id"

// RegisterStore adds the indexes read from the informers' stores (CachedNodeForClaim).
func RegisterStore(ctx context.Context, informers ctrlcache.Informers) error {
	sii, err := nodeStore(ctx, informers)
	if err != nil || sii == nil {
		return err
	}
	err = sii.AddIndexers(toolscache.Indexers{nodeProviderIDStore: func(obj any) ([]string, error) {
		if n, ok := obj.(*corev1.Node); ok && n.Spec.ProviderID != "" {
			return []string{n.Spec.ProviderID}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return fmt.Errorf("indexing the node store by provider id: %w", err)
	}
	return nil
}

// CachedNodeForClaim is NodeForClaim returning the cache's own Node, read only. Without the store
// index (informers nil, or RegisterStore not called) it lists from kube without deep copies.
func CachedNodeForClaim(ctx context.Context, informers ctrlcache.Informers, kube client.Reader, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	sii, err := nodeStore(ctx, informers)
	if err != nil {
		return nil, err
	}
	if sii == nil || sii.GetIndexer().GetIndexers()[nodeProviderIDStore] == nil {
		return NodeForClaim(ctx, kube, nc, client.UnsafeDisableDeepCopy)
	}
	objs, err := sii.GetIndexer().ByIndex(nodeProviderIDStore, nc.Status.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("finding the node with provider id %s: %w", nc.Status.ProviderID, err)
	}
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			return n, nil
		}
	}
	return nil, nil
}

// nodeStore is the node informer as a client-go store, or nil when there is none.
func nodeStore(ctx context.Context, informers ctrlcache.Informers) (toolscache.SharedIndexInformer, error) {
	if informers == nil {
		return nil, nil
	}
	inf, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("getting the node informer: %w", err)
	}
	sii, _ := inf.(toolscache.SharedIndexInformer)
	return sii, nil
}
