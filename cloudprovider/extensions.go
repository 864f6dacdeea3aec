package cloudprovider

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// UnavailableOfferingsOf returns the unavailable-offerings cache the provider shares with the launch
// path (which marks the offerings of an InsufficientCapacityError), or nil when it exposes none.
func UnavailableOfferingsOf(cp CloudProvider) *UnavailableOfferings {
	if x, ok := cp.(interface{ UnavailableOfferings() *UnavailableOfferings }); ok {
		return x.UnavailableOfferings()
	}
	return nil
}

// ControllerRegistrar is implemented by providers that bring controllers of their own (the AWS
// EC2NodeClass and interruption controllers); the controller wiring registers them with the rest.
type ControllerRegistrar interface {
	RegisterControllers(ctx context.Context, mgr manager.Manager) error
}
