package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestRequirementIntersectEmpty(t *testing.T) {
	in := func(v ...string) Requirement { return NewRequirement("k", corev1.NodeSelectorOpIn, v...) }
	notIn := func(v ...string) Requirement { return NewRequirement("k", corev1.NodeSelectorOpNotIn, v...) }
	op := func(o corev1.NodeSelectorOperator, v ...string) Requirement { return NewRequirement("k", o, v...) }
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
		{"Gt and NotIn the only value", op(corev1.NodeSelectorOpGt, "7"), NewRequirement("k", corev1.NodeSelectorOpLt, "9").Intersect(notIn("8")), true},
		{"In vs Gt", in("4", "16"), op(corev1.NodeSelectorOpGt, "8"), false},
		{"In vs Gt none", in("4", "8"), op(corev1.NodeSelectorOpGt, "8"), true},
		{"In non-numeric vs Gt", in("large"), op(corev1.NodeSelectorOpGt, "1"), true},
		{"Bad bound admits nothing", in("3"), op(corev1.NodeSelectorOpGt, "x"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.a.Intersect(c.b).Empty(); got != c.empty {
				t.Errorf("%s ∩ %s empty = %v, want %v", c.a, c.b, got, c.empty)
			}
			if got := c.b.Intersect(c.a).Empty(); got != c.empty {
				t.Errorf("commuted: %s ∩ %s empty = %v, want %v", c.b, c.a, got, c.empty)
			}
		})
	}
}

func TestOfferings(t *testing.T) {
	cat := testCatalog()
	known := KnownKeys(cat)
	count := func(np *v1.NodePool) (types, offerings int) {
		rs := NodePoolRequirements(np)
		for _, it := range cat {
			if o := rs.Offerings(it, known); len(o) > 0 {
				types++
				offerings += len(o)
			}
		}
		return
	}
	cases := []struct {
		name             string
		np               *v1.NodePool
		types, offerings int
	}{
		{"no requirements: on-demand only (Karpenter default)", pool("a"), 5, 10},
		{"spot and on-demand", pool("a", req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand")), 5, 20},
		{"arm64 in one zone", pool("a", req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64"), req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")), 2, 2},
		{"exclusion list", pool("a", req(v1.LabelInstanceType, corev1.NodeSelectorOpNotIn, "p3.2xlarge")), 4, 8},
		{"custom label never excludes", pool("a", req("team", corev1.NodeSelectorOpIn, "x"), label("tier", "gold")), 5, 10},
		{"provider label key unknown value", pool("a", req("example.com/family", corev1.NodeSelectorOpIn, "zz")), 0, 0},
		{"unknown zone", pool("a", req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-z")), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if types, offerings := count(c.np); types != c.types || offerings != c.offerings {
				t.Errorf("admits %d types with %d offerings, want %d and %d", types, offerings, c.types, c.offerings)
			}
		})
	}
}
