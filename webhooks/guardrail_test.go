package webhooks_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

func testGuardrails(t *testing.T, s *suite) {
	ctx := context.Background()
	bad := &v1alpha1.Guardrail{ObjectMeta: objectMeta("bad"), Spec: v1alpha1.GuardrailSpec{PodDefaults: []v1alpha1.PodDefaults{{
		DefaultRequests: corev1.ResourceList{corev1.ResourceMemory: *quantity("2Gi")},
		DefaultLimits:   corev1.ResourceList{corev1.ResourceMemory: *quantity("1Gi")},
	}}}}
	err := s.client.Create(ctx, bad)
	want := `admission webhook "vguardrail.policy.joist.dev" denied the request: Guardrail.policy.joist.dev "bad" is invalid: spec.podDefaults[0].defaultRequests[memory]: Invalid value: "2Gi": default request is above the default limit 1Gi; fix: lower defaultRequests.memory or raise defaultLimits.memory`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	s.warnings.take()
	ok := &v1alpha1.Guardrail{ObjectMeta: objectMeta("binds-unknown"), Spec: v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}, NodePools: []string{"team-x"},
	}}}}
	if err := s.client.Create(ctx, ok); err != nil {
		t.Fatal(err)
	}
	defer s.remove(t, ok)
	warnings := s.warnings.take()
	if len(warnings) != 1 || !strings.Contains(warnings[0], `spec.nodePoolBindings[0].nodePools[0]: NodePool "team-x" does not exist (yet)`) {
		t.Fatalf("warnings = %q", warnings)
	}
}
