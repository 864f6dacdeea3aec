package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/podkind"
)

// selects reports whether sel matches the labels; nil selects everything, an invalid selector nothing.
func selects(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(l))
}

type sourcedQuantity struct {
	q      resource.Quantity
	source string
}

// mergedDefaults are all podDefaults that select a namespace, folded together: per resource the
// larger default request and the larger default limit win; alignment is on if any entry asks for it.
type mergedDefaults struct {
	requests, limits map[corev1.ResourceName]sourcedQuantity
	align            string // source of alignNonCPURequests, "" when off
}

func (p Policy) podDefaultsFor(nsLabels map[string]string) mergedDefaults {
	m := mergedDefaults{requests: map[corev1.ResourceName]sourcedQuantity{}, limits: map[corev1.ResourceName]sourcedQuantity{}}
	fold := func(dst map[corev1.ResourceName]sourcedQuantity, src corev1.ResourceList, source string) {
		for n, q := range src {
			if !bounded(q) {
				continue // the Guardrail webhook refuses it
			}
			if cur, ok := dst[n]; !ok || q.Cmp(cur.q) > 0 {
				dst[n] = sourcedQuantity{q: q.DeepCopy(), source: source}
			}
		}
	}
	for _, d := range p.PodDefaults {
		if !selects(d.Item.NamespaceSelector, nsLabels) {
			continue
		}
		fold(m.requests, d.Item.DefaultRequests, d.Source)
		fold(m.limits, d.Item.DefaultLimits, d.Source)
		if d.Item.AlignNonCPURequests && m.align == "" {
			m.align = d.Source
		}
	}
	return m
}

// BoundNodePools returns the NodePools the namespace's pods may use and the Guardrails that say so;
// ok is false when no binding selects the namespace. Several bindings intersect (strictest wins).
func (p Policy) BoundNodePools(nsLabels map[string]string) (pools []string, sources []string, ok bool) {
	var set map[string]bool
	for _, b := range p.Bindings {
		if !selects(&b.Item.NamespaceSelector, nsLabels) {
			continue
		}
		next := map[string]bool{}
		for _, n := range b.Item.NodePools {
			if set == nil || set[n] {
				next[n] = true
			}
		}
		set = next
		if !slices.Contains(sources, b.Source) {
			sources = append(sources, b.Source)
		}
	}
	if set == nil {
		return nil, nil, false
	}
	return slices.Sorted(maps.Keys(set)), sources, true
}

// DefaultPod applies podDefaults and nodePoolBindings to a pod of a namespace with the given labels,
// records the changes in the policy.joist.dev/mutations annotation and returns them.
// DaemonSet pods and pods already bound to a node keep their placement; their resources are defaulted.
// A pod with a quantity beyond quantity's bounds is left as it is: ValidatePodQuantities denies it.
func DefaultPod(p Policy, pod *corev1.Pod, nsLabels map[string]string) []string {
	if len(ValidatePodQuantities(pod)) > 0 {
		return nil
	}
	var changes []string
	d := p.podDefaultsFor(nsLabels)
	for i := range pod.Spec.InitContainers {
		changes = append(changes, d.apply(&pod.Spec.InitContainers[i], "initContainers")...)
	}
	for i := range pod.Spec.Containers {
		changes = append(changes, d.apply(&pod.Spec.Containers[i], "containers")...)
	}
	if r, ok := p.placementFor(pod.Namespace, nsLabels); ok && !placedElsewhere(pod) {
		if injectNodePoolAffinity(pod, r.expression) {
			changes = append(changes, fmt.Sprintf("affinity %s by %s", describeExpression(r.expression), r.setting.Source))
		}
	}
	if len(changes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[v1alpha1.MutationsAnnotationKey] = strings.Join(changes, "; ")
	}
	return changes
}

func (d mergedDefaults) apply(c *corev1.Container, kind string) []string {
	var changes []string
	set := func(list *corev1.ResourceList, what string, n corev1.ResourceName, q resource.Quantity, why string) {
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[n] = q.DeepCopy()
		changes = append(changes, fmt.Sprintf("%s[%s].resources.%s.%s=%s (%s)", kind, c.Name, what, n, q.String(), why))
	}
	userLimits := maps.Clone(c.Resources.Limits)
	for _, n := range slices.Sorted(maps.Keys(d.limits)) {
		def := d.limits[n]
		if _, ok := c.Resources.Limits[n]; ok {
			continue
		}
		if req, ok := c.Resources.Requests[n]; ok && req.Cmp(def.q) > 0 {
			continue // a default limit below the container's own request would make the pod invalid
		}
		set(&c.Resources.Limits, "limits", n, def.q, "defaultLimits by "+def.source)
	}
	names := slices.Collect(maps.Keys(d.requests))
	names = append(names, slices.Collect(maps.Keys(c.Resources.Limits))...)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if _, ok := c.Resources.Requests[n]; ok {
			continue
		}
		lim, hasLim := c.Resources.Limits[n]
		_, userLimit := userLimits[n]
		def, hasDef := d.requests[n]
		switch {
		case hasLim && userLimit:
			set(&c.Resources.Requests, "requests", n, lim, "request = limit")
		case hasDef:
			q := def.q
			if hasLim && q.Cmp(lim) > 0 {
				q = lim
			}
			set(&c.Resources.Requests, "requests", n, q, "defaultRequests by "+def.source)
		case hasLim:
			set(&c.Resources.Requests, "requests", n, lim, "request = defaulted limit")
		}
	}
	if d.align != "" {
		for _, n := range slices.Sorted(maps.Keys(c.Resources.Limits)) {
			lim := c.Resources.Limits[n]
			if req, ok := c.Resources.Requests[n]; n != corev1.ResourceCPU && ok && req.Cmp(lim) < 0 {
				set(&c.Resources.Requests, "requests", n, lim, "alignNonCPURequests by "+d.align)
			}
		}
	}
	return changes
}

// placedElsewhere: DaemonSet pods pin themselves to one node and pods with spec.nodeName are already
// bound; a NodePool affinity would only make them unschedulable.
func placedElsewhere(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" {
		return true
	}
	return podkind.IsDaemonSet(pod)
}

// nodePoolExpression is "karpenter.sh/nodepool In pools"; with no pool, DoesNotExist: the pod may
// then only use capacity Joist does not manage.
func nodePoolExpression(pools []string) corev1.NodeSelectorRequirement {
	if len(pools) == 0 {
		return corev1.NodeSelectorRequirement{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpDoesNotExist}
	}
	return corev1.NodeSelectorRequirement{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: pools}
}

func describeExpression(e corev1.NodeSelectorRequirement) string {
	if len(e.Values) == 0 {
		return fmt.Sprintf("%s %s", e.Key, e.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", e.Key, e.Operator, strings.Join(e.Values, ","))
}

// injectNodePoolAffinity adds expr (a nodePoolExpression or a NotIn of reserved pools) to every
// required node selector term (terms are ORed, so each must carry it). It reports whether the pod
// changed.
func injectNodePoolAffinity(pod *corev1.Pod, expr corev1.NodeSelectorRequirement) bool {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(*terms) == 0 {
		*terms = append(*terms, corev1.NodeSelectorTerm{})
	}
	changed := false
	for i := range *terms {
		t := &(*terms)[i]
		if slices.ContainsFunc(t.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
			return e.Key == expr.Key && e.Operator == expr.Operator && slices.Equal(e.Values, expr.Values)
		}) {
			continue
		}
		t.MatchExpressions = append(t.MatchExpressions, *expr.DeepCopy())
		changed = true
	}
	return changed
}

// NamespaceOptedOut reports whether a namespace carries the opt-out label (set by whoever administers
// namespaces, so always honoured).
func NamespaceOptedOut(nsLabels map[string]string) bool {
	return nsLabels[v1alpha1.OptOutLabelKey] == v1alpha1.OptOutLabelValue
}

// PodOptedOut reports whether the pod guardrails skip a pod: its namespace opted out, or the pod
// carries the opt-out label in a namespace some Guardrail's podOptOut selects. Elsewhere the pod's
// label is ignored, since any tenant who can create a pod can set it.
func PodOptedOut(guardrails []v1alpha1.Guardrail, pod *corev1.Pod, nsLabels map[string]string) bool {
	if NamespaceOptedOut(nsLabels) {
		return true
	}
	if pod.Labels[v1alpha1.OptOutLabelKey] != v1alpha1.OptOutLabelValue {
		return false
	}
	return slices.ContainsFunc(guardrails, func(g v1alpha1.Guardrail) bool {
		return g.Spec.PodOptOut != nil && selects(&g.Spec.PodOptOut.NamespaceSelector, nsLabels)
	})
}
