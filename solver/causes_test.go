package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// TestUnschedulableCauses: every pod the solver leaves unplaced carries a typed cause (and, for
// limits, the NodePool), so callers never parse the human-readable reason.
func TestUnschedulableCauses(t *testing.T) {
	limited := func(remaining corev1.ResourceList) solver.Input {
		in := defaultInput(pod("p", "2", "1Gi"))
		in.NodePools[0].Remaining = remaining
		return in
	}
	cases := []struct {
		name     string
		in       solver.Input
		cause    solver.Cause
		nodePool string
	}{
		{"pool limits exhausted", limited(rl("cpu", "1")), solver.CauseLimits, "default"},
		{"untolerated taint", solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi")},
			NodePools: []solver.NodePoolInput{poolInput(nodePool("gpu", poolTaint("gpu", "true", corev1.TaintEffectNoSchedule)), standardTypes())}},
			solver.CauseTaints, ""},
		{"requirement no type meets", defaultInput(pod("p", "1", "1Gi", nodeSelector(v1.LabelArch, "arm64"))), solver.CauseRequirements, ""},
		{"too large for any type", defaultInput(pod("p", "64", "1Gi")), solver.CauseResources, ""},
		{"no NodePool", solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi")}}, solver.CauseNoCapacity, ""},
		{"volume zones disjoint", func() solver.Input {
			in := defaultInput(pod("p", "1", "1Gi", pvc("a"), pvc("b")))
			in.VolumeZones = map[string][]string{"default/a": {"zone-a"}, "default/b": {"zone-b"}}
			return in
		}(), solver.CauseVolumeZones, ""},
		{"unparsable selector", defaultInput(pod("p", "1", "1Gi", requiredTerms([]corev1.NodeSelectorRequirement{expr("n", corev1.NodeSelectorOpGt, "x")}))),
			solver.CauseInvalidSpec, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := solver.Solve(c.in)
			if len(res.Unschedulable) != 1 {
				t.Fatalf("got %d unschedulable, %d claims; want the pod unschedulable", len(res.Unschedulable), len(res.NewNodeClaims))
			}
			u := res.Unschedulable[0]
			if u.Cause != c.cause || u.NodePool != c.nodePool {
				t.Errorf("cause %q nodePool %q (reason %q), want %q %q", u.Cause, u.NodePool, u.Reason, c.cause, c.nodePool)
			}
			if u.Reason == "" {
				t.Error("empty reason")
			}
		})
	}
}
