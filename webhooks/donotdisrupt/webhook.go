// Package donotdisrupt is the validating admission webhook for the karpenter.sh/do-not-disrupt
// annotation on Pods, Nodes and NodeClaims; on Pods it also rejects an explicit selection of a
// NodePool the namespace is not bound to. All three fail open (failurePolicy Ignore, and errors
// reading the policy admit the object with a warning) so that a Joist outage blocks no workload.
package donotdisrupt

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/policy"
)

// Pod UPDATEs only matter when the new pod carries the annotation (CREATE also checks the pod's
// NodePool selection), Nodes and NodeClaims only when they carry it: matchConditions keep every other
// update in the cluster from calling Joist at all, and the annotation-only webhooks get a short timeout.
// "system" in the namespace exclusion is the install namespace, set by config/default's replacements.
// There is no object selector: a pod's own opt-out label counts only where a Guardrail's podOptOut
// allows it (policy.PodOptedOut), which the webhook decides.
// +kubebuilder:webhook:path=/validate--v1-pod,mutating=false,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create;update,versions=v1,name=vpod.policy.joist.dev,admissionReviewVersions=v1,timeoutSeconds=5,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-node-lease","system"]},{"key":"policy.joist.dev/guardrails","operator":"NotIn","values":["disabled"]}]},"matchConditions":[{"name":"create-or-do-not-disrupt","expression":"request.operation == 'CREATE' || (has(object.metadata.annotations) && 'karpenter.sh/do-not-disrupt' in object.metadata.annotations)"}]}`
// +kubebuilder:webhook:path=/validate--v1-node,mutating=false,failurePolicy=ignore,sideEffects=None,groups="",resources=nodes,verbs=create;update,versions=v1,name=vnode.policy.joist.dev,admissionReviewVersions=v1,timeoutSeconds=2,patch=`{"matchConditions":[{"name":"has-do-not-disrupt","expression":"has(object.metadata.annotations) && 'karpenter.sh/do-not-disrupt' in object.metadata.annotations"}]}`
// +kubebuilder:webhook:path=/validate-karpenter-sh-v1-nodeclaim,mutating=false,failurePolicy=ignore,sideEffects=None,groups=karpenter.sh,resources=nodeclaims,verbs=create;update,versions=v1,name=vnodeclaim.policy.joist.dev,admissionReviewVersions=v1,timeoutSeconds=2,patch=`{"matchConditions":[{"name":"has-do-not-disrupt","expression":"has(object.metadata.annotations) && 'karpenter.sh/do-not-disrupt' in object.metadata.annotations"}]}`
// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Setup registers the Pod, Node and NodeClaim validators.
// Pods in excludeNamespace (Joist's install namespace; empty for none) are admitted unchecked.
func Setup(mgr ctrl.Manager, r client.Reader, excludeNamespace string) error {
	pods := &Validator[*corev1.Pod]{Reader: r, Kind: "Pod", ExcludeNamespace: excludeNamespace}
	if err := ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).WithValidator(pods).Complete(); err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &corev1.Node{}).WithValidator(&Validator[*corev1.Node]{Reader: r, Kind: "Node"}).Complete(); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1.NodeClaim{}).WithValidator(&Validator[*v1.NodeClaim]{Reader: r, Kind: "NodeClaim"}).Complete(); err != nil {
		return fmt.Errorf("nodeclaims: %w", err)
	}
	return nil
}

// Validator checks do-not-disrupt (and, for pods, NodePool bindings) on one kind.
type Validator[T client.Object] struct {
	Reader client.Reader
	Kind   string
	// ExcludeNamespace is Joist's install namespace: its pods are never checked, so that a broken
	// guardrail cannot keep Joist itself from starting.
	ExcludeNamespace string
}

func (v *Validator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	return v.validate(ctx, obj, nil)
}

func (v *Validator[T]) ValidateUpdate(ctx context.Context, old, obj T) (admission.Warnings, error) {
	return v.validate(ctx, obj, old)
}

func (v *Validator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

func (v *Validator[T]) validate(ctx context.Context, obj T, old client.Object) (admission.Warnings, error) {
	pod, isPod := any(obj).(*corev1.Pod)
	_, hasDND := obj.GetAnnotations()[v1.DoNotDisruptAnnotationKey]
	if !hasDND && (!isPod || old != nil) {
		return nil, nil // nothing to judge: the common case needs no reads
	}
	var guardrails v1alpha1.GuardrailList
	if err := v.Reader.List(ctx, &guardrails); err != nil {
		return v.failOpen(ctx, fmt.Errorf("listing guardrails: %w", err))
	}
	ev := policy.Evaluate(guardrails.Items)
	var nsLabels map[string]string
	var pinnedPool string
	if isPod {
		ns := pod.Namespace
		if req, err := admission.RequestFromContext(ctx); err == nil && req.Namespace != "" {
			ns = req.Namespace
		}
		if v.ExcludeNamespace != "" && ns == v.ExcludeNamespace {
			return nil, nil
		}
		var namespace corev1.Namespace
		if err := v.Reader.Get(ctx, client.ObjectKey{Name: ns}, &namespace); err != nil {
			return v.failOpen(ctx, fmt.Errorf("getting namespace %s: %w", ns, err))
		}
		if policy.PodOptedOut(guardrails.Items, pod, namespace.Labels) {
			return nil, nil
		}
		nsLabels = namespace.Labels
		if node := policy.PinnedNode(pod); node != "" && old == nil {
			var n corev1.Node
			if err := v.Reader.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil && !apierrors.IsNotFound(err) {
				return v.failOpen(ctx, fmt.Errorf("getting node %s: %w", node, err))
			}
			pinnedPool = n.Labels[v1.NodePoolLabelKey]
		}
		if pod.Namespace == "" {
			pod = pod.DeepCopy()
			pod.Namespace = ns
			obj = any(pod).(T)
		}
	}
	vs := ev.Judge(func(p policy.Policy) policy.Violations {
		vs := policy.ValidateDoNotDisrupt(p, v.Kind, obj, old, nsLabels)
		if isPod && old == nil {
			vs = append(vs, policy.ValidatePodPlacement(p, pod, nsLabels, pinnedPool)...)
		}
		return vs
	})
	if isPod && old == nil {
		vs = append(vs, policy.ValidatePodQuantities(pod)...) // always enforced, whatever the Guardrails say
	}
	errs, warns := vs.Split()
	if len(errs) > 0 {
		gk := schema.GroupKind{Kind: v.Kind}
		if v.Kind == "NodeClaim" {
			gk.Group = v1.Group
		}
		return warns, apierrors.NewInvalid(gk, obj.GetName(), errs)
	}
	return warns, nil
}

func (v *Validator[T]) failOpen(ctx context.Context, err error) (admission.Warnings, error) {
	log.FromContext(ctx).Error(err, "admitting without guardrail checks", "kind", v.Kind)
	return admission.Warnings{fmt.Sprintf("Joist guardrails not checked: %v", err)}, nil
}
