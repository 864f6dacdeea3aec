package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/requirements"
)

// ReservedNodePools returns the NodePools some nodePoolBinding lists, with the Guardrails that list
// them: a pool bound to namespaces is reserved for them, and the pods of other namespaces may not use
// it.
func (p Policy) ReservedNodePools() (pools []string, sources []string) {
	set := map[string]bool{}
	for _, b := range p.Bindings {
		for _, n := range b.Item.NodePools {
			set[n] = true
		}
		if len(b.Item.NodePools) > 0 && !slices.Contains(sources, b.Source) {
			sources = append(sources, b.Source)
		}
	}
	return slices.Sorted(maps.Keys(set)), sources
}

// placement is where the pods of one namespace may go.
type placement struct {
	allowed    requirements.Requirement
	expression corev1.NodeSelectorRequirement
	setting    Setting
	// why completes "…, but <why>"; fix is the remedy for an explicit selection.
	why, fix string
}

// placementFor returns the NodePools a namespace's pods may use: the pools bound to it when a
// binding selects it, otherwise every pool except those reserved for other namespaces. ok is false
// when neither applies (no binding at all).
func (p Policy) placementFor(namespace string, nsLabels map[string]string) (placement, bool) {
	if pools, sources, ok := p.BoundNodePools(nsLabels); ok {
		return placement{
			allowed: requirements.In(pools...), expression: nodePoolExpression(pools),
			setting: Setting{Action: v1alpha1.ActionDeny, Source: strings.Join(sources, ", ")},
			why:     fmt.Sprintf("namespace %q may only use NodePools %v", namespace, pools),
			fix:     fmt.Sprintf("select one of the NodePools bound to namespace %q (%s), or drop the NodePool selection", namespace, strings.Join(pools, ", ")),
		}, true
	}
	reserved, sources := p.ReservedNodePools()
	if len(reserved) == 0 {
		return placement{}, false
	}
	expr := corev1.NodeSelectorRequirement{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpNotIn, Values: reserved}
	allowed, err := requirements.New(expr.Operator, expr.Values)
	if err != nil {
		return placement{}, false // cannot happen: NotIn takes any values
	}
	return placement{
		allowed: allowed, expression: expr,
		setting: Setting{Action: v1alpha1.ActionDeny, Source: strings.Join(sources, ", ")},
		why:     fmt.Sprintf("NodePools %v are reserved for the namespaces their nodePoolBindings select, and namespace %q is not one of them", reserved, namespace),
		fix:     fmt.Sprintf("select a NodePool not reserved for other namespaces, or ask the platform team to add namespace %q to the binding of the NodePool", namespace),
	}, true
}

// PinnedNode is the node a pod is placed on without the scheduler's choice of a NodePool:
// spec.nodeName, or the single node a DaemonSet pod's required affinity names (metadata.name In
// [node], as the DaemonSet controller writes it). "" when neither.
func PinnedNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if !podkind.IsDaemonSet(pod) || pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil ||
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// ValidatePodPlacement denies a pod whose explicit NodePool selection its namespace may not use
// (through spec.nodeSelector, or required node affinity terms that all name such pools), and a pod
// pinned to a node (PinnedNode: spec.nodeName or a DaemonSet's node) whose NodePool it may not use.
// A namespace a binding selects may use only its bound pools; any other namespace may use every pool
// except those bound to namespaces (ReservedNodePools). pinnedPool is the karpenter.sh/nodepool
// label of the pinned node ("" when there is none, or the node is not Joist's).
func ValidatePodPlacement(p Policy, pod *corev1.Pod, nsLabels map[string]string, pinnedPool string) Violations {
	r, ok := p.placementFor(pod.Namespace, nsLabels)
	if !ok {
		return nil
	}
	var vs Violations
	if pinnedPool != "" && !r.allowed.Has(pinnedPool) {
		node := PinnedNode(pod)
		if pod.Spec.NodeName != "" {
			vs.add(r.setting, RuleBindings, field.NewPath("spec", "nodeName"),
				fmt.Sprintf("bind the pod to a node of a NodePool it may use, or leave spec.nodeName empty and let the scheduler choose (%s)", describeExpression(r.expression)),
				"pod is bound to node %q of NodePool %q, but %s", node, pinnedPool, r.why)
		} else {
			vs.add(r.setting, RuleBindings, field.NewPath("spec", "affinity", "nodeAffinity"),
				fmt.Sprintf("add {key: %s, operator: %s, values: [%s]} to the DaemonSet's required node affinity, so that it creates no pods on the nodes of other NodePools",
					r.expression.Key, r.expression.Operator, strings.Join(r.expression.Values, ", ")),
				"DaemonSet pod is placed on node %q of NodePool %q, but %s", node, pinnedPool, r.why)
		}
	}
	if want, ok := pod.Spec.NodeSelector[v1.NodePoolLabelKey]; ok && !r.allowed.Has(want) {
		vs.add(r.setting, RuleBindings, field.NewPath("spec", "nodeSelector").Key(v1.NodePoolLabelKey), r.fix,
			"pod selects NodePool %q, but %s", want, r.why)
	}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil || pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return vs
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	dead := 0
	var named []string
	for _, t := range terms {
		var sel requirements.Set
		for _, e := range t.MatchExpressions {
			if e.Key == v1.NodePoolLabelKey {
				req, err := requirements.New(e.Operator, e.Values)
				if err != nil {
					req = requirements.Requirement{} // admits nothing, as the scheduler would not place it
				}
				sel = sel.With(e.Key, req)
			}
		}
		req, ok := sel.Get(v1.NodePoolLabelKey)
		if x := req.Intersect(r.allowed); ok && x.Empty() {
			dead++
			named = append(named, req.Describe(v1.NodePoolLabelKey))
		}
	}
	if len(terms) > 0 && dead == len(terms) {
		vs.add(r.setting, RuleBindings, field.NewPath("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"), r.fix,
			"pod requires %s, but %s", strings.Join(named, " or "), r.why)
	}
	return vs
}

// ConfineToBoundNodePools returns the pod as the provisioner must plan it: a copy restricted to the
// NodePools its namespace may use (its bound pools, or every pool but those reserved for other
// namespaces), when the pod webhook did not do that (it fails open, and may have been down). ok is
// false when the pod is planned as it is.
func ConfineToBoundNodePools(p Policy, pod *corev1.Pod, nsLabels map[string]string) (confined *corev1.Pod, ok bool) {
	r, restricted := p.placementFor(pod.Namespace, nsLabels)
	if !restricted || placedElsewhere(pod) {
		return nil, false
	}
	out := pod.DeepCopy()
	if !injectNodePoolAffinity(out, r.expression) {
		return nil, false
	}
	return out, true
}
