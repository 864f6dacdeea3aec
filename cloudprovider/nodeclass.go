package cloudprovider

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// NodeClassKind names the NodeClass type a provider serves (EC2NodeClass, AKSNodeClass, KWOKNodeClass).
type NodeClassKind struct {
	Group string
	Kind  string
}

// ConditionedNodeClass is a NodeClass with status conditions.
type ConditionedNodeClass interface {
	client.Object
	IsTrue(conditionType string) bool
}

func (k NodeClassKind) isReferencedBy(ref *v1.NodeClassReference) bool {
	return ref != nil && ref.Group == k.Group && ref.Kind == k.Kind
}

// GetClaimNodeClass reads the NodeClass the claim references into into. A reference to another kind
// is an error naming the kind the provider needs: such a claim cannot launch here.
func GetClaimNodeClass(ctx context.Context, kube client.Reader, kind NodeClassKind, claim *v1.NodeClaim, into client.Object) error {
	ref := claim.Spec.NodeClassRef
	if !kind.isReferencedBy(ref) {
		return fmt.Errorf("nodeclaim %s references %v; this provider needs a %s %s", claim.Name, ref, kind.Group, kind.Kind)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: ref.Name}, into); err != nil {
		return fmt.Errorf("getting %s %s: %w", kind.Kind, ref.Name, err)
	}
	return nil
}

// GetReadyPoolNodeClass reads the pool's NodeClass into into and reports whether the pool can launch
// with it: false (and no error) when the pool references another kind, or its class is missing or
// not Ready yet — the class's status says why.
func GetReadyPoolNodeClass(ctx context.Context, kube client.Reader, kind NodeClassKind, pool *v1.NodePool, into ConditionedNodeClass, readyCondition string) (bool, error) {
	ref := pool.Spec.Template.Spec.NodeClassRef
	if !kind.isReferencedBy(ref) {
		return false, nil
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: ref.Name}, into); err != nil {
		return false, client.IgnoreNotFound(fmt.Errorf("getting %s %s: %w", kind.Kind, ref.Name, err))
	}
	return into.IsTrue(readyCondition), nil
}
