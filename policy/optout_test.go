package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

func TestPodOptedOut(t *testing.T) {
	t.Parallel()
	optedOut := func() *corev1.Pod {
		p := podWith()
		p.Labels = map[string]string{v1alpha1.OptOutLabelKey: v1alpha1.OptOutLabelValue}
		return p
	}
	allowSandbox := guardrail("allow", v1alpha1.GuardrailSpec{PodOptOut: &v1alpha1.PodOptOut{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "sandbox"}}}})
	bind := guardrail("bind", v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"team-a"}}}})
	cases := []struct {
		name       string
		guardrails []v1alpha1.Guardrail
		pod        *corev1.Pod
		ns         map[string]string
		want       bool
	}{
		{"pod label without any allowance is ignored", []v1alpha1.Guardrail{bind}, optedOut(), map[string]string{"team": "a"}, false},
		{"pod label in a namespace not selected is ignored", []v1alpha1.Guardrail{bind, allowSandbox}, optedOut(), map[string]string{"tier": "prod"}, false},
		{"pod label in an allowed namespace counts", []v1alpha1.Guardrail{bind, allowSandbox}, optedOut(), map[string]string{"tier": "sandbox"}, true},
		{"namespace label always counts", nil, podWith(), map[string]string{v1alpha1.OptOutLabelKey: v1alpha1.OptOutLabelValue}, true},
		{"no label", []v1alpha1.Guardrail{allowSandbox}, podWith(), map[string]string{"tier": "sandbox"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodOptedOut(tc.guardrails, tc.pod, tc.ns); got != tc.want {
				t.Fatalf("PodOptedOut = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfineToBoundNodePools(t *testing.T) {
	t.Parallel()
	p := Merge([]v1alpha1.Guardrail{guardrail("bind", v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, NodePools: []string{"team-a"}}}})})
	pod := podWith()
	confined, ok := ConfineToBoundNodePools(p, pod, map[string]string{"team": "a"})
	if !ok {
		t.Fatal("a pod of a bound namespace without the binding's affinity must be confined")
	}
	if pod.Spec.Affinity != nil {
		t.Fatal("the original pod must not change")
	}
	terms := confined.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Key != v1.NodePoolLabelKey ||
		terms[0].MatchExpressions[0].Values[0] != "team-a" {
		t.Fatalf("confined affinity %+v, want karpenter.sh/nodepool In [team-a]", terms)
	}
	if _, ok := ConfineToBoundNodePools(p, confined, map[string]string{"team": "a"}); ok {
		t.Fatal("an already confined pod (the webhook did its job) must be planned as it is")
	}
	other, ok := ConfineToBoundNodePools(p, podWith(), map[string]string{"team": "b"})
	if !ok {
		t.Fatal("a pod of an unbound namespace must be kept off the pools reserved for bound namespaces")
	}
	terms = other.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpNotIn ||
		terms[0].MatchExpressions[0].Values[0] != "team-a" {
		t.Fatalf("affinity %+v, want karpenter.sh/nodepool NotIn [team-a]", terms)
	}
	if _, ok := ConfineToBoundNodePools(Merge(nil), podWith(), map[string]string{"team": "b"}); ok {
		t.Fatal("without bindings a pod must be planned as it is")
	}
}
