package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

const gpuCountKey = "joist.dev/instance-gpu-count"

// TestGPUPoolProbe is issue #9's probe at the solver layer: a NodePool requiring
// joist.dev/instance-gpu-count In [1], a catalog of one CPU type without that label and one GPU type.
// The solver used to plan the cheaper CPU type (treating the missing label as the pool's own); it
// must plan the GPU type, for every operator that needs the label.
func TestGPUPoolProbe(t *testing.T) {
	cases := []struct {
		op     corev1.NodeSelectorOperator
		values []string
	}{
		{corev1.NodeSelectorOpIn, []string{"1"}},
		{corev1.NodeSelectorOpExists, nil},
		{corev1.NodeSelectorOpGt, []string{"0"}},
	}
	for _, c := range cases {
		t.Run(string(c.op), func(t *testing.T) {
			types := []*catalog.InstanceType{
				instanceType("c.xlarge", "4", "16Gi", 0.2),
				instanceType("g.xlarge", "4", "16Gi", 1.0, withLabel(gpuCountKey, "1"), withCapacity("nvidia.com/gpu", "1")),
			}
			np := nodePool("gpu", poolReq(gpuCountKey, c.op, c.values...))
			in := solver.Input{Pods: pods(3, "p", "1", "1Gi"), NodePools: []solver.NodePoolInput{poolInput(np, types)}}
			res := solver.Solve(in)
			if err := verify.Verify(in, res); err != nil {
				t.Fatal(err)
			}
			if len(res.NewNodeClaims) != 1 {
				t.Fatalf("got %d claims, unschedulable %+v; want 1", len(res.NewNodeClaims), res.Unschedulable)
			}
			nc := res.NewNodeClaims[0]
			if nc.InstanceType.Name != "g.xlarge" || len(nc.InstanceTypeOptions) != 1 {
				t.Fatalf("planned %s with %d options, want g.xlarge only", nc.InstanceType.Name, len(nc.InstanceTypeOptions))
			}
		})
	}
}
