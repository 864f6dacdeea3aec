// Package cloudprovider is the one small interface between Joist's controllers and a cloud.
// Implementations live in sub-packages (kwok, aws); they return the solver's instance-type data types.
package cloudprovider

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// CloudProvider launches and removes instances for NodeClaims.
type CloudProvider interface {
	// Create launches an instance for the claim and returns the claim as launched: status.providerID,
	// capacity and allocatable set; labels for instance type, zone and capacity type added.
	// Create is idempotent: an instance already launched for this claim is returned, not launched again.
	// A provider that creates the Node object itself (KWOK) may set status.nodeName to it: the
	// lifecycle then registers the Node in the same reconcile instead of waiting for its cache.
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)
	// Delete terminates the claim's instance. It returns a NodeClaimNotFoundError once it is gone.
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error
	// Get returns the launched claim for a provider ID, or a NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)
	// List returns every instance this provider launched (for garbage collection).
	List(ctx context.Context) ([]*v1.NodeClaim, error)
	// GetInstanceTypes returns what the pool may launch, with current offerings and availability.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*catalog.InstanceType, error)
	// IsDrifted returns a non-empty reason when the claim's instance no longer matches its NodeClass.
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)
	// Name is the provider's name (kwok, aws).
	Name() string
}

// DriftReason says why an instance drifted; empty means not drifted.
type DriftReason string

// NodeClaimNotFoundError means the instance does not exist (any more).
type NodeClaimNotFoundError struct{ Err error }

func (e *NodeClaimNotFoundError) Error() string { return fmt.Sprintf("nodeclaim not found: %v", e.Err) }
func (e *NodeClaimNotFoundError) Unwrap() error { return e.Err }

// NewNodeClaimNotFoundError wraps err as a not-found error.
func NewNodeClaimNotFoundError(err error) error { return &NodeClaimNotFoundError{Err: err} }

// IsNodeClaimNotFoundError reports whether err (or anything it wraps) is a not-found error.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// InsufficientCapacityError means none of the claim's offerings could be launched; the offerings
// tried are reported so the caller can mark them unavailable and choose the next-cheapest.
type InsufficientCapacityError struct {
	Err       error
	Offerings []UnavailableOffering
}

// UnavailableOffering identifies one offering that failed for lack of capacity.
type UnavailableOffering struct {
	InstanceType string
	Zone         string
	CapacityType string
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity: %v", e.Err)
}
func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// IsInsufficientCapacityError reports whether err (or anything it wraps) is an insufficient-capacity error.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}
