package policy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

func maxCPU(name string, enforcement v1alpha1.Enforcement, cpu string) v1alpha1.Guardrail {
	g := guardrail(name, v1alpha1.GuardrailSpec{NodePools: v1alpha1.NodePoolRules{
		MaxLimits: &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"cpu": *q(cpu)}},
	}})
	g.Spec.Enforcement = enforcement
	return g
}

func describe(vs Violations) []string {
	var out []string
	for _, v := range vs {
		out = append(out, string(v.Setting.Action)+": "+v.Field.String()+": "+v.Detail())
	}
	return out
}

func TestEnforcementJudge(t *testing.T) {
	t.Parallel()
	noLimits := pool("a", limits())
	cpu := func(n string) *v1.NodePool { return pool("a", limits("cpu", n)) }
	cases := []struct {
		name string
		gs   []v1alpha1.Guardrail
		np   *v1.NodePool
		// want: one substring per violation, in order, prefixed with the action.
		want []string
	}{
		{name: "no Guardrail: built-in defaults deny", np: noLimits,
			want: []string{"deny: spec.limits: rule nodePools.requireLimits (built-in default)"}},
		{name: "builtInEnforcement Audit admits silently", np: noLimits,
			gs: []v1alpha1.Guardrail{guardrail("migration", v1alpha1.GuardrailSpec{Enforcement: v1alpha1.EnforcementAudit, BuiltInEnforcement: v1alpha1.EnforcementAudit})}},
		{name: "builtInEnforcement Warn warns naming rule and fix", np: noLimits,
			gs:   []v1alpha1.Guardrail{guardrail("migration", v1alpha1.GuardrailSpec{BuiltInEnforcement: v1alpha1.EnforcementWarn})},
			want: []string{`warn: spec.limits: rule nodePools.requireLimits (built-in default): would be denied once enforced (built-in default has enforcement Warn): NodePool "a" sets no limit (cpu, memory or nodes), so it can grow without bound while pods are pending; fix: set at least one of spec.limits.cpu`}},
		{name: "the strictest builtInEnforcement wins", np: noLimits,
			gs: []v1alpha1.Guardrail{
				guardrail("a", v1alpha1.GuardrailSpec{BuiltInEnforcement: v1alpha1.EnforcementAudit}),
				guardrail("b", v1alpha1.GuardrailSpec{BuiltInEnforcement: v1alpha1.EnforcementDeny}),
			},
			want: []string{"deny: spec.limits: rule nodePools.requireLimits (built-in default)"}},
		{name: "Guardrail in Warn", np: cpu("600"), gs: []v1alpha1.Guardrail{maxCPU("w", v1alpha1.EnforcementWarn, "500")},
			want: []string{`warn: spec.limits[cpu]: rule nodePools.maxLimits (Guardrail "w"): would be denied once enforced (Guardrail "w" has enforcement Warn): spec.limits.cpu is 600, above the per-pool ceiling 500; fix: lower spec.limits.cpu to at most 500`}},
		{name: "Guardrail in Audit", np: cpu("600"), gs: []v1alpha1.Guardrail{maxCPU("a", v1alpha1.EnforcementAudit, "500")}},
		{name: "Guardrail in Deny", np: cpu("600"), gs: []v1alpha1.Guardrail{maxCPU("d", "", "500")},
			want: []string{`deny: spec.limits[cpu]: rule nodePools.maxLimits (Guardrail "d"): spec.limits.cpu is 600`}},
		{name: "a lower ceiling in Audit does not weaken one in Deny", np: cpu("600"),
			gs:   []v1alpha1.Guardrail{maxCPU("audit", v1alpha1.EnforcementAudit, "100"), maxCPU("deny", v1alpha1.EnforcementDeny, "500")},
			want: []string{`deny: spec.limits[cpu]: rule nodePools.maxLimits (Guardrail "deny"): spec.limits.cpu is 600, above the per-pool ceiling 500`}},
		{name: "a Guardrail in Audit leaves the built-in defaults enforced", np: noLimits,
			gs: []v1alpha1.Guardrail{guardrail("relax", v1alpha1.GuardrailSpec{Enforcement: v1alpha1.EnforcementAudit,
				NodePools: v1alpha1.NodePoolRules{RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionOff}}})},
			want: []string{"deny: spec.limits: rule nodePools.requireLimits (built-in default)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := Evaluate(tc.gs)
			got := describe(ev.Judge(func(p Policy) Violations { return ValidateNodePool(p, tc.np, NodePoolContext{}) }))
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("violation %d:\n got %s\nwant %s…", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestEnforcementWouldDeny(t *testing.T) {
	t.Parallel()
	gs := []v1alpha1.Guardrail{
		maxCPU("audit", v1alpha1.EnforcementAudit, "100"),
		maxCPU("deny", v1alpha1.EnforcementDeny, "500"),
		guardrail("migration", v1alpha1.GuardrailSpec{Enforcement: v1alpha1.EnforcementAudit, BuiltInEnforcement: v1alpha1.EnforcementAudit}),
	}
	ev := Evaluate(gs)
	report := func(np *v1.NodePool) map[string][]string {
		out := map[string][]string{}
		for name, vs := range ev.WouldDeny(func(p Policy) Violations { return ValidateNodePool(p, np, NodePoolContext{}) }) {
			for _, v := range vs {
				out[name] = append(out[name], v.Rule)
			}
		}
		return out
	}
	if got := report(pool("small", limits("cpu", "50"))); len(got) != 0 {
		t.Errorf("a pool within every ceiling is reported: %v", got)
	}
	got := report(pool("mid", limits("cpu", "300")))
	if len(got) != 1 || len(got["audit"]) != 1 || got["audit"][0] != RuleMaxLimits {
		t.Errorf("cpu 300: want only Guardrail audit's maxLimits, got %v", got)
	}
	// Admitted before Guardrail "deny" existed: reported under it; "audit" adds nothing beyond the
	// enforced denial of the same field (its ceiling message differs, so it is its own entry).
	got = report(pool("big", limits("cpu", "600")))
	if len(got["deny"]) != 1 || len(got["audit"]) != 1 {
		t.Errorf("cpu 600: want one entry each under deny and audit, got %v", got)
	}
	got = report(pool("unbounded", limits()))
	if len(got[""]) != 1 || got[""][0] != RuleRequireLimits {
		t.Errorf("no limits: want the built-in requireLimits under \"\", got %v", got)
	}
	if r := ev.BuiltInReporters(); len(r) != 1 || r[0] != "migration" {
		t.Errorf("BuiltInReporters = %v, want [migration]", r)
	}
}

// Guardrails in Warn or Audit change nothing that is enforced: their bindings do not confine pods
// and their cluster ceilings do not apply.
func TestMergeIgnoresUnenforcedGuardrails(t *testing.T) {
	t.Parallel()
	bind := guardrail("teams", v1alpha1.GuardrailSpec{
		Enforcement:      v1alpha1.EnforcementAudit,
		NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"team-a"}}},
		ClusterLimits:    &v1alpha1.ClusterLimits{CPU: q("10")},
	})
	p := Merge([]v1alpha1.Guardrail{bind})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a"}}
	if _, ok := ConfineToBoundNodePools(p, pod, nil); ok {
		t.Error("an Audit Guardrail's binding confined a pod")
	}
	if h := ClusterLimitHeadroom([]v1alpha1.Guardrail{bind}, nil, 0); h.Limited() {
		t.Errorf("an Audit Guardrail's ceiling applies: %v", h.Sources)
	}
	bind.Spec.Enforcement = v1alpha1.EnforcementDeny
	if _, ok := ConfineToBoundNodePools(Merge([]v1alpha1.Guardrail{bind}), pod, nil); !ok {
		t.Error("a Deny Guardrail's binding did not confine the pod")
	}
}
