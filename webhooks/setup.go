// Package webhooks wires Joist's admission webhooks into a manager: NodePool validation, pod defaults
// and bindings, do-not-disrupt on Pods/Nodes/NodeClaims, and Guardrail validation. The rules
// themselves live in the pure package policy.
package webhooks

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/webhooks/donotdisrupt"
	"github.com/joist-dev/joist/webhooks/guardrail"
	"github.com/joist-dev/joist/webhooks/nodepool"
	"github.com/joist-dev/joist/webhooks/poddefaults"
)

// Options configures the webhooks.
type Options struct {
	// InstanceTypes returns the cloud provider's instance types for a NodePool (typically
	// CloudProvider.GetInstanceTypes). Optional: without it the spot minInstanceTypes and GPU rules
	// judge from the pool's requirements alone.
	InstanceTypes nodepool.InstanceTypesFunc
	// Reader reads Guardrails, NodePools and Namespaces; defaults to the manager's cached client.
	Reader client.Reader
	// InstallNamespace is the namespace Joist runs in; the pod webhooks leave its pods alone.
	InstallNamespace string
}

// SetupWithManager registers every admission webhook with the manager's webhook server.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if opts.Reader == nil {
		opts.Reader = mgr.GetClient()
	}
	if err := nodepool.Setup(mgr, &nodepool.Validator{Reader: opts.Reader, InstanceTypes: opts.InstanceTypes}); err != nil {
		return fmt.Errorf("setting up nodepool webhook: %w", err)
	}
	if err := poddefaults.Setup(mgr, &poddefaults.Defaulter{Reader: opts.Reader, ExcludeNamespace: opts.InstallNamespace}); err != nil {
		return fmt.Errorf("setting up pod defaults webhook: %w", err)
	}
	if err := donotdisrupt.Setup(mgr, opts.Reader, opts.InstallNamespace); err != nil {
		return fmt.Errorf("setting up do-not-disrupt webhooks: %w", err)
	}
	if err := guardrail.Setup(mgr, &guardrail.Validator{Reader: opts.Reader}); err != nil {
		return fmt.Errorf("setting up guardrail webhook: %w", err)
	}
	return nil
}
