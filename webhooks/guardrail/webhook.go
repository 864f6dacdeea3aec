// Package guardrail is the validating admission webhook for Guardrails themselves (failurePolicy Fail).
package guardrail

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/policy"
)

// +kubebuilder:webhook:path=/validate-policy-joist-dev-v1alpha1-guardrail,mutating=false,failurePolicy=fail,sideEffects=None,groups=policy.joist.dev,resources=guardrails,verbs=create;update,versions=v1alpha1,name=vguardrail.policy.joist.dev,admissionReviewVersions=v1
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch

// Validator checks that a Guardrail is consistent.
type Validator struct {
	Reader client.Reader
}

// Setup registers the webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager, v *Validator) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1alpha1.Guardrail{}).WithValidator(v).Complete()
}

func (v *Validator) ValidateCreate(ctx context.Context, g *v1alpha1.Guardrail) (admission.Warnings, error) {
	return v.validate(ctx, g)
}

func (v *Validator) ValidateUpdate(ctx context.Context, _, g *v1alpha1.Guardrail) (admission.Warnings, error) {
	return v.validate(ctx, g)
}

func (v *Validator) ValidateDelete(context.Context, *v1alpha1.Guardrail) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator) validate(ctx context.Context, g *v1alpha1.Guardrail) (admission.Warnings, error) {
	var pools v1.NodePoolList
	if err := v.Reader.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	known := map[string]bool{}
	for _, p := range pools.Items {
		known[p.Name] = true
	}
	errs, warns := policy.ValidateGuardrail(g, known)
	if len(errs) > 0 {
		return warns, apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("Guardrail").GroupKind(), g.Name, errs)
	}
	return warns, nil
}
