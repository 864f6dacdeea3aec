package webhooks_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/controllers/guardrail"
)

// testEnforcement: Guardrails in Audit and Warn admit what they would deny (silently, or with a
// warning naming rule and fix), the report controller lists the existing offenders in the
// Guardrail's status with counts per rule and an event on each, kubectl's columns show the counts,
// and switching to Deny denies.
func testEnforcement(t *testing.T, s *suite) {
	ctx := context.Background()
	own := req("team", corev1.NodeSelectorOpIn, "enforcement") // keeps these pools apart from other tests'
	migration := &v1alpha1.Guardrail{ObjectMeta: objectMeta("migration"), Spec: v1alpha1.GuardrailSpec{
		Enforcement: v1alpha1.EnforcementAudit, BuiltInEnforcement: v1alpha1.EnforcementAudit,
	}}
	s.create(t, migration)
	defer s.remove(t, migration)
	s.warnings.take()

	unbounded := nodePool("unbounded", noGPU, own, limits())
	if err := s.client.Create(ctx, unbounded); err != nil {
		t.Fatalf("Audit: a pool without limits must be admitted: %v", err)
	}
	defer s.remove(t, unbounded)
	if w := s.warnings.take(); len(w) != 0 {
		t.Errorf("Audit must admit silently, got warnings %q", w)
	}

	got := waitForReport(t, s, "migration", func(st v1alpha1.GuardrailStatus) bool { return st.WouldDeny >= 1 })
	i := slices.IndexFunc(got.Objects, func(o v1alpha1.DeniedObject) bool { return o.Kind == "NodePool" && o.Name == "unbounded" })
	if i < 0 {
		t.Fatalf("status.objects lacks NodePool unbounded: %+v", got.Objects)
	}
	if o := got.Objects[i]; o.Rule != "nodePools.requireLimits" || o.Field != "spec.limits" ||
		!strings.HasPrefix(o.Message, `rule nodePools.requireLimits (built-in default): NodePool "unbounded" sets no limit`) || !strings.Contains(o.Message, "; fix: set at least one of spec.limits.cpu") {
		t.Errorf("status entry = %+v", o)
	}
	if !slices.Contains(got.Rules, v1alpha1.RuleCount{Rule: "nodePools.requireLimits", Objects: 1}) || !strings.Contains(got.Summary, "nodePools.requireLimits=1") {
		t.Errorf("rules %+v, summary %q: want nodePools.requireLimits counted once", got.Rules, got.Summary)
	}
	waitForEvent(t, s, "unbounded", `Guardrail "migration" (enforcement Audit) would deny this NodePool: spec.limits: rule nodePools.requireLimits`)
	checkPrinterColumns(t, s, "migration", "Audit")

	// Warn: admitted, with the denial as a warning.
	base := migration.DeepCopy()
	migration.Spec.BuiltInEnforcement = v1alpha1.EnforcementWarn
	if err := s.client.Patch(ctx, migration, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	s.waitCached(t, migration)
	s.warnings.take()
	second := nodePool("unbounded-2", noGPU, own, limits(), weight(7))
	if err := s.client.Create(ctx, second); err != nil {
		t.Fatalf("Warn: a pool without limits must be admitted: %v", err)
	}
	defer s.remove(t, second)
	want := `spec.limits: rule nodePools.requireLimits (built-in default): would be denied once enforced (built-in default has enforcement Warn): NodePool "unbounded-2" sets no limit (cpu, memory or nodes), so it can grow without bound while pods are pending; fix: set at least one of spec.limits.cpu, spec.limits.memory or spec.limits.nodes`
	if w := s.warnings.take(); !slices.ContainsFunc(w, func(m string) bool { return strings.HasPrefix(m, want) }) {
		t.Errorf("warnings %q\nwant one starting %s", w, want)
	}

	// A Guardrail of its own in Warn, then Deny.
	ceiling := &v1alpha1.Guardrail{ObjectMeta: objectMeta("ceiling"), Spec: v1alpha1.GuardrailSpec{
		Enforcement: v1alpha1.EnforcementWarn,
		NodePools:   v1alpha1.NodePoolRules{MaxLimits: &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"cpu": *quantity("50")}}},
	}}
	s.create(t, ceiling)
	defer s.remove(t, ceiling)
	s.warnings.take()
	big := nodePool("big", noGPU, own, limits("cpu", "100"), weight(8))
	if err := s.client.Create(ctx, big); err != nil {
		t.Fatalf("Warn: a pool above the ceiling must be admitted: %v", err)
	}
	defer s.remove(t, big)
	want = `spec.limits[cpu]: rule nodePools.maxLimits (Guardrail "ceiling"): would be denied once enforced (Guardrail "ceiling" has enforcement Warn): spec.limits.cpu is 100, above the per-pool ceiling 50; fix: lower spec.limits.cpu to at most 50`
	if w := s.warnings.take(); len(w) != 1 || !strings.HasPrefix(w[0], want) {
		t.Errorf("warnings %q\nwant exactly one starting %s", w, want)
	}
	got = waitForReport(t, s, "ceiling", func(st v1alpha1.GuardrailStatus) bool {
		return slices.ContainsFunc(st.Objects, func(o v1alpha1.DeniedObject) bool { return o.Name == "big" })
	})
	// big is above the ceiling; the two unbounded pools set no cpu limit at all.
	if got.WouldDeny != 3 || got.Summary != "nodePools.maxLimits=3" {
		t.Errorf("ceiling's report: wouldDeny %d, summary %q; want 3, nodePools.maxLimits=3", got.WouldDeny, got.Summary)
	}

	base = ceiling.DeepCopy()
	ceiling.Spec.Enforcement = v1alpha1.EnforcementDeny
	if err := s.client.Patch(ctx, ceiling, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	s.waitCached(t, ceiling)
	err := s.client.Create(ctx, nodePool("big-2", noGPU, own, limits("cpu", "100"), weight(9)))
	if err == nil || !strings.Contains(err.Error(), `spec.limits[cpu]: Forbidden: rule nodePools.maxLimits (Guardrail "ceiling"): spec.limits.cpu is 100, above the per-pool ceiling 50`) {
		t.Errorf("Deny: got %v, want the maxLimits denial", err)
	}
	// The pools admitted in Warn stay in the report of the Guardrail now in Deny.
	waitForReport(t, s, "ceiling", func(st v1alpha1.GuardrailStatus) bool {
		return st.ObservedGeneration == ceiling.Generation && st.WouldDeny == 3
	})
}

func waitForReport(t *testing.T, s *suite, name string, cond func(v1alpha1.GuardrailStatus) bool) v1alpha1.GuardrailStatus {
	t.Helper()
	var g v1alpha1.Guardrail
	eventually(t, "the report of Guardrail "+name, func() bool {
		return s.client.Get(context.Background(), client.ObjectKey{Name: name}, &g) == nil && cond(g.Status)
	})
	return g.Status
}

func waitForEvent(t *testing.T, s *suite, regarding, prefix string) {
	t.Helper()
	eventually(t, "an event on "+regarding, func() bool {
		var list eventsv1.EventList
		if err := s.client.List(context.Background(), &list); err != nil {
			return false
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == regarding && e.Reason == guardrail.EventReason && e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Note, prefix)
		})
	})
}

// checkPrinterColumns asks the apiserver for the table kubectl get prints.
func checkPrinterColumns(t *testing.T, s *suite, name, enforcement string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/apis/policy.joist.dev/v1alpha1/guardrails", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		ColumnDefinitions []struct{ Name string }
		Rows              []struct{ Cells []any }
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if !slices.Equal(cols, []string{"Name", "Enforcement", "Would-Deny", "Rules", "Age"}) || len(table.Rows) != 1 {
		t.Fatalf("columns %v, %d rows", cols, len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[1] != enforcement || cells[2] != float64(1) || !strings.Contains(cells[3].(string), "nodePools.requireLimits=1") {
		t.Errorf("kubectl get guardrails row = %v", cells)
	}
}
