package cloudprovider

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// UnavailableOfferingsOf returns the unavailable-offerings cache the provider shares with the launch
// path (which marks the offerings of an InsufficientCapacityError), or nil when it exposes none.
func UnavailableOfferingsOf(cp CloudProvider) *UnavailableOfferings {
	if x, ok := As[interface{ UnavailableOfferings() *UnavailableOfferings }](cp); ok {
		return x.UnavailableOfferings()
	}
	return nil
}

// ControllerRegistrar is implemented by providers that bring controllers of their own (the AWS
// EC2NodeClass and interruption controllers); the controller wiring registers them with the rest.
type ControllerRegistrar interface {
	RegisterControllers(ctx context.Context, mgr manager.Manager) error
}

// Unwrapper is implemented by decorators around a provider (the metrics decorator), so the optional
// interfaces of the provider underneath stay reachable.
type Unwrapper interface {
	Unwrap() CloudProvider
}

// As returns the first provider in cp's chain of decorators that implements T, like errors.As.
func As[T any](cp CloudProvider) (T, bool) {
	for cp != nil {
		if t, ok := cp.(T); ok {
			return t, true
		}
		u, ok := cp.(Unwrapper)
		if !ok {
			break
		}
		cp = u.Unwrap()
	}
	var zero T
	return zero, false
}
