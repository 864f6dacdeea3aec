package main

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver/benchdata"
)

func TestInstanceTypesConvertExactly(t *testing.T) {
	for _, shape := range benchdata.Shapes {
		in := benchdata.MustInput(shape, 10)
		for _, it := range in.NodePools[0].InstanceTypes {
			up := instanceType(it)
			want, got := it.Allocatable(), up.Allocatable()
			for res, q := range want {
				if g := got[res]; g.Cmp(q) != 0 {
					t.Errorf("%s/%s: upstream allocatable %s = %s, joist %s", shape, it.Name, res, g.String(), q.String())
				}
			}
			if len(up.Offerings) != len(it.Offerings) {
				t.Fatalf("%s/%s: %d offerings, want %d", shape, it.Name, len(up.Offerings), len(it.Offerings))
			}
			for i, o := range it.Offerings {
				uo := up.Offerings[i]
				if uo.Price != o.Price || uo.Available != o.Available || uo.Zone() != o.Zone || uo.CapacityType() != o.CapacityType {
					t.Errorf("%s/%s: offering %d = %s/%s %v %f, want %+v", shape, it.Name, i, uo.Zone(), uo.CapacityType(), uo.Available, uo.Price, o)
				}
			}
			if got := up.Requirements.Get(v1.LabelArch).Any(); got != it.Labels[v1.LabelArch] {
				t.Errorf("%s/%s: arch requirement %q, want %q", shape, it.Name, got, it.Labels[v1.LabelArch])
			}
		}
	}
}

func TestNodePoolConverts(t *testing.T) {
	np, err := nodePool(benchdata.NodePool(benchdata.Mixed))
	if err != nil {
		t.Fatal(err)
	}
	if np.Name != "bench-mixed" || len(np.Spec.Template.Spec.Requirements) != 2 || np.Spec.Template.Spec.NodeClassRef == nil {
		t.Fatalf("converted nodepool %s: requirements %v nodeClassRef %v", np.Name, np.Spec.Template.Spec.Requirements, np.Spec.Template.Spec.NodeClassRef)
	}
	req := np.Spec.Template.Spec.Requirements[1]
	if req.Key != karpv1.CapacityTypeLabelKey || req.Operator != corev1.NodeSelectorOpIn || len(req.Values) != 2 {
		t.Errorf("capacity-type requirement converted to %+v", req)
	}
	if !np.StatusConditions().Get(karpv1.ConditionTypeNodeClassReady).IsTrue() {
		t.Errorf("converted nodepool is not NodeClassReady; upstream would skip it")
	}
}

// TestSideBySideSmall runs both schedulers on small inputs: both must place every pod, and
// upstream must honour the anti-affinity fifth of the diverse shape (one node per such pod).
func TestSideBySideSmall(t *testing.T) {
	for _, shape := range benchdata.Shapes {
		in := benchdata.MustInput(shape, 50)
		j := runJoist(in)
		u, err := runUpstream(in, 1, false)
		if err != nil {
			t.Fatalf("%s: %v", shape, err)
		}
		for name, o := range map[string]outcome{"joist": j, "upstream": u} {
			if o.Scheduled != 50 || o.Unschedulable != 0 || o.Nodes == 0 || o.CostPerHour <= 0 {
				t.Errorf("%s/%s: %+v, want 50 pods scheduled on priced nodes", shape, name, o)
			}
		}
		if shape == benchdata.Diverse && u.Nodes < 10 {
			t.Errorf("diverse: upstream used %d nodes for 10 mutually anti-affine pods", u.Nodes)
		}
	}
}

func TestRunPrintsOneRowPerCase(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-shapes", "uniform", "-sizes", "20,40", "-joist-runs", "1", "-markdown"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "| uniform | 20 |") || !strings.HasPrefix(lines[3], "| uniform | 40 |") {
		t.Fatalf("table:\n%s", out.String())
	}
	if err := run([]string{"-shapes", "bogus", "-sizes", "10"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown shape: got %v", err)
	}
}
