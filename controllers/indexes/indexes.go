// Package indexes registers the cache field indexes the controllers look objects up by. It is called
// once from the controllers' wiring, since registering one index twice is an error.
package indexes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
