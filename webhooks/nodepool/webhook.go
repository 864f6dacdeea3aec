// Package nodepool is the validating admission webhook for NodePools: it enforces the Guardrail
// NodePool rules and cluster limits on create and update (failurePolicy Fail).
package nodepool

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/policy"
)

// +kubebuilder:webhook:path=/validate-karpenter-sh-v1-nodepool,mutating=false,failurePolicy=fail,sideEffects=None,groups=karpenter.sh,resources=nodepools,verbs=create;update,versions=v1,name=vnodepool.policy.joist.dev,admissionReviewVersions=v1
// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// InstanceTypesFunc returns the cloud provider's instance types a NodePool could launch.
type InstanceTypesFunc func(ctx context.Context, np *v1.NodePool) ([]*catalog.InstanceType, error)

// Validator validates NodePools against the effective Guardrail policy.
type Validator struct {
	Reader client.Reader
	// InstanceTypes is optional; without it the spot and GPU rules judge from the requirements alone.
	InstanceTypes InstanceTypesFunc
}

// Setup registers the webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager, v *Validator) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1.NodePool{}).WithValidator(v).Complete()
}

func (v *Validator) ValidateCreate(ctx context.Context, np *v1.NodePool) (admission.Warnings, error) {
	return v.validate(ctx, np, nil)
}

func (v *Validator) ValidateUpdate(ctx context.Context, old, np *v1.NodePool) (admission.Warnings, error) {
	return v.validate(ctx, np, old)
}

func (v *Validator) ValidateDelete(context.Context, *v1.NodePool) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, np, old *v1.NodePool) (admission.Warnings, error) {
	var guardrails v1alpha1.GuardrailList
	if err := v.Reader.List(ctx, &guardrails); err != nil {
		return nil, fmt.Errorf("listing guardrails: %w", err)
	}
	var pools v1.NodePoolList
	if err := v.Reader.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	ev := policy.Evaluate(guardrails.Items)
	in := policy.NodePoolContext{Others: pools.Items}
	var warnings admission.Warnings
	if v.InstanceTypes != nil {
		catalog, err := v.InstanceTypes(ctx, np)
		if err != nil {
			log.FromContext(ctx).Error(err, "listing instance types for nodepool validation", "nodepool", np.Name)
			warnings = append(warnings, fmt.Sprintf("instance types of the cloud provider unavailable (%v): the spot and GPU rules judged the requirements alone", err))
		} else {
			in.Catalog = catalog
		}
	}
	vs := ev.Judge(func(p policy.Policy) policy.Violations {
		vs := policy.ValidateNodePool(p, np, in)
		if old != nil {
			vs = vs.ExceptPreexisting(policy.ValidateNodePool(p, old, in))
		}
		return vs
	})
	errs, warns := vs.Split()
	warnings = append(warnings, warns...)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(v1.GroupVersion.WithKind("NodePool").GroupKind(), np.Name, errs)
	}
	return warnings, nil
}
