// Package poddefaults is the mutating admission webhook for Pods: it applies the Guardrails'
// podDefaults and nodePoolBindings on create. It fails open: errors are logged and the pod is admitted
// unchanged, and the webhook configuration uses failurePolicy Ignore, so a Joist outage never blocks
// pods.
package poddefaults

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/policy"
)

// The namespace selector keeps the webhook away from kube-system, kube-node-lease, Joist's own
// namespace ("system", the install namespace set by config/default's replacements; the Defaulter also
// skips ExcludeNamespace) and namespaces labelled policy.joist.dev/guardrails=disabled. There is no
// object selector: a pod's own opt-out label counts only where a Guardrail's podOptOut allows it
// (policy.PodOptedOut), which the webhook decides.
// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod.policy.joist.dev,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","system"]},{"key":"policy.joist.dev/guardrails","operator":"NotIn","values":["disabled"]}]}}`
// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Defaulter applies podDefaults and nodePoolBindings.
type Defaulter struct {
	Reader client.Reader
	// ExcludeNamespace is Joist's install namespace: its pods are never defaulted.
	ExcludeNamespace string
}

// Setup registers the webhook with the manager's webhook server.
func Setup(mgr ctrl.Manager, d *Defaulter) error {
	return ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).WithDefaulter(d).Complete()
}

// Default mutates the pod in place; it never returns an error, so that it cannot block a pod.
func (d *Defaulter) Default(ctx context.Context, pod *corev1.Pod) error {
	logger := log.FromContext(ctx)
	ns := pod.Namespace
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Namespace != "" {
		ns = req.Namespace
	}
	if d.ExcludeNamespace != "" && ns == d.ExcludeNamespace {
		return nil
	}
	guardrails, nsLabels, err := load(ctx, d.Reader, ns)
	if err != nil {
		logger.Error(err, "skipping pod defaults", "namespace", ns)
		return nil
	}
	if policy.PodOptedOut(guardrails, pod, nsLabels) {
		return nil
	}
	if changes := policy.DefaultPod(policy.Merge(guardrails), pod, nsLabels); len(changes) > 0 {
		logger.V(1).Info("defaulted pod", "namespace", ns, "changes", changes)
	}
	return nil
}

func load(ctx context.Context, r client.Reader, namespace string) ([]v1alpha1.Guardrail, map[string]string, error) {
	var guardrails v1alpha1.GuardrailList
	if err := r.List(ctx, &guardrails); err != nil {
		return nil, nil, fmt.Errorf("listing guardrails: %w", err)
	}
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		return nil, nil, fmt.Errorf("getting namespace %s: %w", namespace, err)
	}
	return guardrails.Items, ns.Labels, nil
}
