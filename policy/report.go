package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// Inventory is the set of existing objects an audit report judges.
type Inventory struct {
	NodePools  []v1.NodePool
	Pods       []corev1.Pod
	Nodes      []corev1.Node
	NodeClaims []v1.NodeClaim
	// NamespaceLabels are the labels of the pods' namespaces, by name.
	NamespaceLabels map[string]map[string]string
	// Catalogs are the provider's instance types per NodePool name; a pool without an entry is
	// judged from its requirements alone, as the webhook does without a catalog.
	Catalogs map[string][]*catalog.InstanceType
}

// Finding is one existing object that a rule would deny.
type Finding struct {
	Kind      string
	Namespace string
	Name      string
	UID       types.UID
	Violation Violation
}

// Report judges every object of the inventory as the admission webhooks would judge its creation,
// and returns per Guardrail name ("" for the built-in defaults) what would be denied if that layer
// were in Deny mode (Evaluation.WouldDeny). Pods that opted out of the pod guardrails are skipped,
// as the webhooks skip them.
func Report(guardrails []v1alpha1.Guardrail, inv Inventory) map[string][]Finding {
	ev := Evaluate(guardrails)
	out := map[string][]Finding{}
	collect := func(kind string, obj metav1.Object, validate func(Policy) Violations) {
		for layer, vs := range ev.WouldDeny(validate) {
			for _, v := range vs {
				out[layer] = append(out[layer], Finding{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID(), Violation: v})
			}
		}
	}
	for i := range inv.NodePools {
		np := &inv.NodePools[i]
		in := NodePoolContext{Others: inv.NodePools, Catalog: inv.Catalogs[np.Name]}
		collect("NodePool", np, func(p Policy) Violations { return ValidateNodePool(p, np, in) })
	}
	poolOfNode := map[string]string{}
	for _, n := range inv.Nodes {
		poolOfNode[n.Name] = n.Labels[v1.NodePoolLabelKey]
	}
	for i := range inv.Pods {
		pod := &inv.Pods[i]
		ns := inv.NamespaceLabels[pod.Namespace]
		if PodOptedOut(guardrails, pod, ns) {
			continue
		}
		collect("Pod", pod, func(p Policy) Violations {
			vs := ValidateDoNotDisrupt(p, "Pod", pod, nil, ns)
			vs = append(vs, ValidatePodPlacement(p, pod, ns, poolOfNode[PinnedNode(pod)])...)
			return append(vs, ValidatePodQuantities(pod)...)
		})
	}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		collect("Node", n, func(p Policy) Violations { return ValidateDoNotDisrupt(p, "Node", n, nil, nil) })
	}
	for i := range inv.NodeClaims {
		nc := &inv.NodeClaims[i]
		collect("NodeClaim", nc, func(p Policy) Violations { return ValidateDoNotDisrupt(p, "NodeClaim", nc, nil, nil) })
	}
	for layer := range out {
		slices.SortStableFunc(out[layer], compareFindings)
	}
	return out
}

func compareFindings(a, b Finding) int {
	for _, c := range [][2]string{{a.Kind, b.Kind}, {a.Namespace, b.Namespace}, {a.Name, b.Name}, {a.Violation.Rule, b.Violation.Rule}} {
		if d := strings.Compare(c[0], c[1]); d != 0 {
			return d
		}
	}
	return strings.Compare(a.Violation.Field.String(), b.Violation.Field.String())
}

// MaxReportedObjects bounds GuardrailStatus.objects (the CRD's maxItems).
const MaxReportedObjects = 100

// StatusReport summarises findings for GuardrailStatus: the number of distinct objects, the count
// per rule (objects, not violations), a one-line summary, and the first limit findings.
func StatusReport(findings []Finding, limit int) (wouldDeny int32, rules []v1alpha1.RuleCount, summary string, objects []v1alpha1.DeniedObject) {
	findings = slices.Clone(findings)
	slices.SortStableFunc(findings, compareFindings)
	objectsSeen := map[string]bool{}
	perRule := map[string]map[string]bool{}
	for _, f := range findings {
		key := f.Kind + "/" + f.Namespace + "/" + f.Name
		objectsSeen[key] = true
		if perRule[f.Violation.Rule] == nil {
			perRule[f.Violation.Rule] = map[string]bool{}
		}
		perRule[f.Violation.Rule][key] = true
		if len(objects) < limit {
			objects = append(objects, v1alpha1.DeniedObject{
				Kind: f.Kind, Namespace: f.Namespace, Name: f.Name, Rule: f.Violation.Rule,
				Field: truncate(f.Violation.Field.String(), 512), Message: truncate(f.Violation.Detail(), 2048),
			})
		}
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(perRule)) {
		rules = append(rules, v1alpha1.RuleCount{Rule: r, Objects: int32(len(perRule[r]))})
		parts = append(parts, fmt.Sprintf("%s=%d", r, len(perRule[r])))
	}
	return int32(len(objectsSeen)), rules, strings.Join(parts, " "), objects
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
