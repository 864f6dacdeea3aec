package requirements

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func must(t *testing.T, op corev1.NodeSelectorOperator, v ...string) Requirement {
	t.Helper()
	r, err := New(op, v)
	if err != nil {
		t.Fatalf("New(%s, %v): %v", op, v, err)
	}
	return r
}

func TestIntersectEmpty(t *testing.T) {
	t.Parallel()
	in := func(v ...string) Requirement { return must(t, corev1.NodeSelectorOpIn, v...) }
	notIn := func(v ...string) Requirement { return must(t, corev1.NodeSelectorOpNotIn, v...) }
	op := func(o corev1.NodeSelectorOperator, v ...string) Requirement { return must(t, o, v...) }
	cases := []struct {
		name  string
		a, b  Requirement
		empty bool
	}{
		{"In overlapping", in("a", "b"), in("b", "c"), false},
		{"In disjoint", in("a"), in("b"), true},
		{"In vs NotIn covering", in("a"), notIn("a"), true},
		{"In vs NotIn partial", in("a", "b"), notIn("a"), false},
		{"NotIn vs NotIn", notIn("a"), notIn("b"), false},
		{"Exists vs DoesNotExist", op(corev1.NodeSelectorOpExists), op(corev1.NodeSelectorOpDoesNotExist), true},
		{"NotIn vs DoesNotExist: both admit a node without the label", notIn("a"), op(corev1.NodeSelectorOpDoesNotExist), false},
		{"In vs DoesNotExist", in("a"), op(corev1.NodeSelectorOpDoesNotExist), true},
		{"Gt vs Lt disjoint", op(corev1.NodeSelectorOpGt, "8"), op(corev1.NodeSelectorOpLt, "9"), true},
		{"Gt vs Lt one value", op(corev1.NodeSelectorOpGt, "7"), op(corev1.NodeSelectorOpLt, "9"), false},
		{"Gte vs Lte equal", op(v1.NodeSelectorOpGte, "8"), op(v1.NodeSelectorOpLte, "8"), false},
		{"Gte vs Lt equal", op(v1.NodeSelectorOpGte, "8"), op(corev1.NodeSelectorOpLt, "8"), true},
		{"Gt and NotIn the only value", op(corev1.NodeSelectorOpGt, "7"), op(corev1.NodeSelectorOpLt, "9").Intersect(notIn("8")), true},
		{"Gt and NotIn one of two values", op(corev1.NodeSelectorOpGt, "6"), op(corev1.NodeSelectorOpLt, "9").Intersect(notIn("8")), false},
		{"In vs Gt", in("4", "16"), op(corev1.NodeSelectorOpGt, "8"), false},
		{"In vs Gt none", in("4", "8"), op(corev1.NodeSelectorOpGt, "8"), true},
		{"In non-numeric vs Gt", in("large"), op(corev1.NodeSelectorOpGt, "1"), true},
		{"zero value admits nothing", in("3"), Requirement{}, true},
		{"Any admits everything", in("3"), Any(), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ab, ba := c.a.Intersect(c.b), c.b.Intersect(c.a)
			if got := ab.Empty(); got != c.empty {
				t.Errorf("%s ∩ %s empty = %v, want %v", c.a.Describe("k"), c.b.Describe("k"), got, c.empty)
			}
			if got := ba.Empty(); got != c.empty {
				t.Errorf("commuted: %s ∩ %s empty = %v, want %v", c.b.Describe("k"), c.a.Describe("k"), got, c.empty)
			}
		})
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		op     corev1.NodeSelectorOperator
		values []string
	}{
		{corev1.NodeSelectorOpGt, []string{"x"}},
		{corev1.NodeSelectorOpLt, nil},
		{v1.NodeSelectorOpGte, []string{"1", "2"}},
		{"Near", []string{"1"}},
	} {
		if _, err := New(c.op, c.values); err == nil {
			t.Errorf("New(%s, %v) = nil error, want one", c.op, c.values)
		}
	}
}

// TestMatchesEveryOperator pins each operator on a present value, another value and a missing label.
func TestMatchesEveryOperator(t *testing.T) {
	t.Parallel()
	cases := []struct {
		op                       corev1.NodeSelectorOperator
		values                   []string
		on4, on8, onText, absent bool
	}{
		{corev1.NodeSelectorOpIn, []string{"4"}, true, false, false, false},
		{corev1.NodeSelectorOpNotIn, []string{"4"}, false, true, true, true},
		{corev1.NodeSelectorOpExists, nil, true, true, true, false},
		{corev1.NodeSelectorOpDoesNotExist, nil, false, false, false, true},
		{corev1.NodeSelectorOpGt, []string{"4"}, false, true, false, false},
		{corev1.NodeSelectorOpLt, []string{"8"}, true, false, false, false},
		{v1.NodeSelectorOpGte, []string{"4"}, true, true, false, false},
		{v1.NodeSelectorOpLte, []string{"4"}, true, false, false, false},
	}
	for _, c := range cases {
		r := must(t, c.op, c.values...)
		got := [4]bool{r.Matches("4", true), r.Matches("8", true), r.Matches("large", true), r.Matches("", false)}
		if want := [4]bool{c.on4, c.on8, c.onText, c.absent}; got != want {
			t.Errorf("%s %v: matches(4, 8, large, absent) = %v, want %v", c.op, c.values, got, want)
		}
		// The rendered NodeClaim form admits exactly the same labels.
		back, err := FromAPI(r.ToAPI("k", nil))
		if err != nil {
			t.Fatalf("%s: ToAPI does not parse back: %v", c.op, err)
		}
		for _, l := range []map[string]string{{"k": "4"}, {"k": "8"}, {"k": "large"}, {}} {
			if want, got := (Set{{"k", r}}).MatchesLabels(l, ""), back.MatchesLabels(l, ""); want != got {
				t.Errorf("%s %v: ToAPI form %v matches %v = %v, the requirement %v", c.op, c.values, r.ToAPI("k", nil), l, got, want)
			}
		}
	}
}

func TestForPod(t *testing.T) {
	t.Parallel()
	spec := &corev1.PodSpec{
		NodeSelector: map[string]string{v1.LabelArch: "arm64"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
				{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}},
			},
		}}},
	}
	alts, err := ForPod(spec)
	if err != nil || len(alts) != 2 {
		t.Fatalf("ForPod = %d alternatives, %v; want 2", len(alts), err)
	}
	if !alts[0].MatchesLabels(map[string]string{v1.LabelArch: "arm64", v1.LabelTopologyZone: "a"}, "x") {
		t.Error("first term should match an arm64 node in zone a")
	}
	if alts[0].MatchesLabels(map[string]string{v1.LabelArch: "amd64", v1.LabelTopologyZone: "a"}, "x") {
		t.Error("the nodeSelector applies to every term")
	}
	if !alts[1].MatchesLabels(map[string]string{v1.LabelArch: "arm64"}, "n1") || alts[1].MatchesLabels(map[string]string{v1.LabelArch: "arm64"}, "n2") {
		t.Error("second term selects node n1 by name")
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	if _, err := ForPod(spec); err != ErrNoTerms {
		t.Errorf("only empty terms: err = %v, want ErrNoTerms", err)
	}
}

func TestSample(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op     corev1.NodeSelectorOperator
		values []string
		and    *Requirement
		want   string
		ok     bool
	}{
		{corev1.NodeSelectorOpIn, []string{"b", "a"}, nil, "a", true},
		{corev1.NodeSelectorOpExists, nil, nil, "0", true},
		{corev1.NodeSelectorOpGt, []string{"5"}, nil, "6", true},
		{v1.NodeSelectorOpGte, []string{"5"}, nil, "5", true},
		{corev1.NodeSelectorOpLt, []string{"3"}, nil, "0", true},
		{corev1.NodeSelectorOpLt, []string{"-3"}, nil, "-4", true},
		{corev1.NodeSelectorOpGt, []string{"-10"}, nil, "0", true},
		{corev1.NodeSelectorOpExists, nil, ptrTo(must(t, corev1.NodeSelectorOpNotIn, "0", "1")), "2", true},
		{corev1.NodeSelectorOpNotIn, []string{"a"}, nil, "", false},
		{corev1.NodeSelectorOpDoesNotExist, nil, nil, "", false},
		{corev1.NodeSelectorOpGt, []string{"5"}, ptrTo(must(t, corev1.NodeSelectorOpLt, "6")), "", false},
	} {
		r := must(t, tc.op, tc.values...)
		if tc.and != nil {
			r = r.Intersect(*tc.and)
		}
		got, ok := r.Sample()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %v (and %v): Sample = %q, %v; want %q, %v", tc.op, tc.values, tc.and, got, ok, tc.want, tc.ok)
		}
		if ok && !r.Has(got) {
			t.Errorf("%s %v: sample %q does not satisfy the requirement", tc.op, tc.values, got)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
