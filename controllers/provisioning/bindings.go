package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/policy"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.joist.dev,resources=guardrails,verbs=get;list;watch

// enforceBindings returns the pods as the solver must see them: a pod of a namespace bound to some
// NodePools is confined to them even when the pod webhook (which fails open) did not add the
// affinity, or the pod carries an opt-out label no Guardrail allows there. Only the solver's copies
// change; the pods in the cluster are left as they are.
func (p *Provisioner) enforceBindings(ctx context.Context, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	var guardrails policyv1alpha1.GuardrailList
	if err := p.kube.List(ctx, &guardrails); err != nil {
		return nil, fmt.Errorf("listing guardrails: %w", err)
	}
	bindings := false
	for i := range guardrails.Items {
		bindings = bindings || len(guardrails.Items[i].Spec.NodePoolBindings) > 0
	}
	if !bindings {
		return pods, nil
	}
	merged := policy.Merge(guardrails.Items)
	nsLabels := map[string]map[string]string{}
	out := make([]*corev1.Pod, len(pods))
	for i, pod := range pods {
		out[i] = pod
		labels, ok := nsLabels[pod.Namespace]
		if !ok {
			ns := &corev1.Namespace{}
			if err := p.kube.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
				return nil, fmt.Errorf("getting namespace %s: %w", pod.Namespace, err)
			}
			labels = ns.Labels
			nsLabels[pod.Namespace] = labels
		}
		if policy.PodOptedOut(guardrails.Items, pod, labels) {
			continue
		}
		if confined, ok := policy.ConfineToBoundNodePools(merged, pod, labels); ok {
			out[i] = confined
		}
	}
	return out, nil
}
