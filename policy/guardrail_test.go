package policy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

func TestValidateGuardrail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		spec      v1alpha1.GuardrailSpec
		wantErr   string
		wantWarns []string
	}{
		{name: "empty is fine", spec: v1alpha1.GuardrailSpec{}},
		{name: "request above limit", spec: v1alpha1.GuardrailSpec{PodDefaults: []v1alpha1.PodDefaults{{DefaultRequests: rl("memory", "2Gi"), DefaultLimits: rl("memory", "1Gi")}}},
			wantErr: `spec.podDefaults[0].defaultRequests[memory]: Invalid value: "2Gi": default request is above the default limit 1Gi; fix: lower defaultRequests.memory or raise defaultLimits.memory`},
		{name: "negative ceiling", spec: v1alpha1.GuardrailSpec{ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("-1")}},
			wantErr: `spec.clusterLimits.cpu: Invalid value: "-1": must not be negative`},
		{name: "default beyond quantity bounds", spec: v1alpha1.GuardrailSpec{PodDefaults: []v1alpha1.PodDefaults{{DefaultRequests: rl("memory", "1e9999999"), DefaultLimits: rl("memory", "1Gi")}}},
			wantErr: `spec.podDefaults[0].defaultRequests[memory]: Invalid value: "1e9999999": is beyond 1e30, more than any node has; fix: write e.g. "4", 500m, 8Gi`},
		{name: "ceiling beyond quantity bounds", spec: v1alpha1.GuardrailSpec{ClusterLimits: &v1alpha1.ClusterLimits{Memory: q("1e40")}},
			wantErr: `spec.clusterLimits.memory: Invalid value: "10e39": is beyond 1e30`},
		{name: "bad selector", spec: v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{
			NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}},
			NodePools:         []string{"known"},
		}}}, wantErr: `spec.nodePoolBindings[0].namespaceSelector`},
		{name: "bad pool name", spec: v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"Not_A_Name"}}}},
			wantErr: `spec.nodePoolBindings[0].nodePools[0]: Invalid value: "Not_A_Name"`},
		{name: "unknown pool and zero ceiling warn", spec: v1alpha1.GuardrailSpec{
			ClusterLimits:    &v1alpha1.ClusterLimits{Nodes: ptr(int64(0))},
			NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"known", "later"}}},
			PodDefaults:      []v1alpha1.PodDefaults{{}},
		}, wantWarns: []string{
			"spec.clusterLimits.nodes: a ceiling of 0 stops Joist from launching any node",
			"spec.podDefaults[0]: sets no defaults and no alignment, so it changes nothing",
			`spec.nodePoolBindings[0].nodePools[1]: NodePool "later" does not exist (yet)`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := guardrail("g", c.spec)
			errs, warns := ValidateGuardrail(&g, map[string]bool{"known": true})
			if c.wantErr == "" && len(errs) > 0 {
				t.Fatalf("unexpected errors %v", errs)
			}
			if c.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), c.wantErr)) {
				t.Fatalf("errs = %v, want one containing %q", errs, c.wantErr)
			}
			if len(warns) != len(c.wantWarns) {
				t.Fatalf("warns = %q, want %q", warns, c.wantWarns)
			}
			for i := range warns {
				if !strings.HasPrefix(warns[i], c.wantWarns[i]) {
					t.Errorf("warning %d = %q, want prefix %q", i, warns[i], c.wantWarns[i])
				}
			}
		})
	}
}
