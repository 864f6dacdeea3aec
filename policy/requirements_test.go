package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/requirements"
)

func TestOfferings(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	known := requirements.Known(cat)
	count := func(np *v1.NodePool) (types, offers int) {
		rs := nodePoolSet(np)
		for _, it := range cat {
			if o := offerings(rs, it, known); len(o) > 0 {
				types++
				offers += len(o)
			}
		}
		return
	}
	cases := []struct {
		name             string
		np               *v1.NodePool
		types, offerings int
	}{
		{"fixture: on-demand only", pool("a"), 5, 10},
		{"no capacity-type requirement: spot too (Karpenter v1)", pool("a", anyCapacity), 5, 20},
		{"spot and on-demand", pool("a", anyCapacity, req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand")), 5, 20},
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

// TestGPUPoolProbe is issue #9's probe at the policy layer: a pool requiring a GPU label admits only
// the catalog's GPU type, not the CPU type that lacks the label.
func TestGPUPoolProbe(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	cat[4].Labels["joist.dev/instance-gpu-count"] = "1"
	known := requirements.Known(cat)
	for _, op := range []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpExists} {
		vals := []string{"1"}
		if op == corev1.NodeSelectorOpExists {
			vals = nil
		}
		np := pool("gpu", req("joist.dev/instance-gpu-count", op, vals...))
		var admitted []string
		for _, it := range cat {
			if len(offerings(nodePoolSet(np), it, known)) > 0 {
				admitted = append(admitted, it.Name)
			}
		}
		if len(admitted) != 1 || admitted[0] != "p3.2xlarge" {
			t.Errorf("%s: pool admits %v, want only p3.2xlarge", op, admitted)
		}
	}
}
