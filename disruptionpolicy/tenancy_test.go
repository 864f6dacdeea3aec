package disruptionpolicy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// A bound pod on a node is confined as the pending pod it becomes once evicted: only its namespace's
// pools; another namespace's pod is kept off the pools reserved for the bound namespaces; the
// input's own objects are left alone.
func TestConfineBoundPods(t *testing.T) {
	g := policyv1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "teams"}}
	g.Spec.NodePoolBindings = []policyv1alpha1.NodePoolBinding{{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, NodePools: []string{"team-a"}}}
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	tenant, other := pod("shop"), pod("web")
	in := solver.Input{Nodes: []solver.ExistingNode{{Name: "n1", Pods: []*corev1.Pod{tenant, other}}}}
	out := Confine(in, []policyv1alpha1.Guardrail{g}, map[string]map[string]string{"shop": {"team": "a"}})

	got := out.Nodes[0].Pods[0]
	if got == tenant {
		t.Fatal("the tenant's pod was not confined")
	}
	if got.Spec.NodeName != "n1" {
		t.Errorf("confined copy lost its node: %q", got.Spec.NodeName)
	}
	aff := got.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		t.Fatalf("confined pod has no required node affinity: %+v", aff)
	}
	found := false
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			found = found || (e.Key == v1.NodePoolLabelKey && len(e.Values) == 1 && e.Values[0] == "team-a")
		}
	}
	if !found {
		t.Errorf("confined pod's affinity does not name pool team-a: %+v", aff.NodeAffinity)
	}
	// team-a is reserved for the namespaces bound to it: another namespace's pod is kept off it.
	kept := out.Nodes[0].Pods[1]
	reserved := false
	if a := kept.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				reserved = reserved || (e.Key == v1.NodePoolLabelKey && e.Operator == corev1.NodeSelectorOpNotIn && len(e.Values) == 1 && e.Values[0] == "team-a")
			}
		}
	}
	if !reserved {
		t.Errorf("a pod of an unbound namespace may still be planned onto the reserved pool team-a: %+v", kept.Spec.Affinity)
	}
	if other.Spec.Affinity != nil {
		t.Error("Confine modified its input")
	}
	if in.Nodes[0].Pods[0] != tenant || tenant.Spec.Affinity != nil {
		t.Error("Confine modified its input")
	}
}
