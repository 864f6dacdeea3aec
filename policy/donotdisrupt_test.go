package policy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

func annotated(kind, value string) metav1.Object {
	meta := metav1.ObjectMeta{Name: "x", Namespace: "team-a", Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: value}}
	if kind == "Node" {
		meta.Namespace = ""
		return &corev1.Node{ObjectMeta: meta}
	}
	return &corev1.Pod{ObjectMeta: meta}
}

func TestValidateDoNotDisrupt(t *testing.T) {
	t.Parallel()
	restricted := Merge([]v1alpha1.Guardrail{guardrail("dnd", v1alpha1.GuardrailSpec{DoNotDisrupt: &v1alpha1.DoNotDisruptRules{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch": "true"}},
		MaxDuration:       &metav1.Duration{Duration: 4 * time.Hour},
		AllowForever:      ptr(false),
		AllowOnNodes:      ptr(false),
	}})})
	warnOnly := Merge([]v1alpha1.Guardrail{guardrail("dnd", v1alpha1.GuardrailSpec{DoNotDisrupt: &v1alpha1.DoNotDisruptRules{
		Action: v1alpha1.ActionWarn, MaxDuration: &metav1.Duration{Duration: time.Hour},
	}})})
	batch := map[string]string{"batch": "true"}
	cases := []struct {
		name      string
		p         Policy
		kind      string
		value     string
		oldValue  *string
		nsLabels  map[string]string
		wantErr   string
		wantWarns int
	}{
		{name: "defaults allow forever on pods", p: Merge(nil), kind: "Pod", value: "true"},
		{name: "defaults allow nodes", p: Merge(nil), kind: "Node", value: "true"},
		{name: "defaults reject garbage", p: Merge(nil), kind: "Pod", value: "yes please",
			wantErr: `metadata.annotations[karpenter.sh/do-not-disrupt]: Forbidden: rule doNotDisrupt (built-in default): "yes please" is neither "true", "false" nor a positive duration such as "4h"; fix: set it to "true", "false" or a duration such as "2h"`},
		{name: "allowed namespace, short duration", p: restricted, kind: "Pod", value: "2h", nsLabels: batch},
		{name: "false is always fine", p: restricted, kind: "Pod", value: "false", nsLabels: batch},
		{name: "namespace not selected", p: restricted, kind: "Pod", value: "1h", nsLabels: map[string]string{"batch": "no"},
			wantErr: `rule doNotDisrupt.namespaceSelector (Guardrail "dnd"): namespace "team-a" may not use karpenter.sh/do-not-disrupt; fix: remove the annotation, or ask the platform team to label namespace "team-a" so it matches the selector "batch=true"`},
		{name: "forever not allowed", p: restricted, kind: "Pod", value: "true", nsLabels: batch,
			wantErr: `rule doNotDisrupt.allowForever (Guardrail "dnd"): "true" (protection without end) is not allowed; fix: set it to a duration of at most 4h0m0s, e.g. "2h", counted from the pod's creation`},
		{name: "too long", p: restricted, kind: "Pod", value: "5h", nsLabels: batch,
			wantErr: `rule doNotDisrupt.maxDuration (Guardrail "dnd"): "5h" is longer than the allowed 4h0m0s; fix: set it to at most "4h0m0s"`},
		{name: "nodes not allowed", p: restricted, kind: "Node", value: "1h",
			wantErr: `rule doNotDisrupt.allowOnNodes (Guardrail "dnd"): Node "x" may not carry karpenter.sh/do-not-disrupt`},
		{name: "unchanged on update is not re-judged", p: restricted, kind: "Node", value: "true", oldValue: ptr("true")},
		{name: "changed on update is judged", p: restricted, kind: "Pod", value: "9h", oldValue: ptr("1h"), nsLabels: batch,
			wantErr: `"9h" is longer than the allowed 4h0m0s`},
		{name: "warn action only warns", p: warnOnly, kind: "Node", value: "3h", wantWarns: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var old metav1.Object
			if c.oldValue != nil {
				old = annotated(c.kind, *c.oldValue)
			}
			errs, warns := ValidateDoNotDisrupt(c.p, c.kind, annotated(c.kind, c.value), old, c.nsLabels).Split()
			if len(warns) != c.wantWarns {
				t.Errorf("warnings = %q, want %d", warns, c.wantWarns)
			}
			if c.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected denial: %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.wantErr) {
				t.Fatalf("errs = %v\nwant one containing %s", errs, c.wantErr)
			}
		})
	}
}

func TestDoNotDisruptUntil(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		value              string
		now                time.Time
		protected, forever bool
	}{
		{"true", created.Add(1000 * time.Hour), true, true},
		{"2h", created.Add(time.Hour), true, false},
		{"2h", created.Add(3 * time.Hour), false, false},
		{"false", created, false, false},
		{"garbage", created, false, false},
	}
	for _, c := range cases {
		protected, forever, _ := DoNotDisruptUntil(c.value, created, c.now)
		if protected != c.protected || forever != c.forever {
			t.Errorf("%q at +%s: protected %v forever %v, want %v %v", c.value, c.now.Sub(created), protected, forever, c.protected, c.forever)
		}
	}
}
