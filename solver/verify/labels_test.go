package verify_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

// TestPoolOwnKeyDemandedWithoutValue: a NodePool requirement Exists or Gt on a key no instance type
// defines makes the node carry the label (the provisioner settles a value, as Karpenter does), so a
// pod selecting it by Exists or Gt is valid on the planned node; a pool-own key in the restricted
// kubernetes.io domain gets no label, so the same plan is rejected there.
func TestPoolOwnKeyDemandedWithoutValue(t *testing.T) {
	for _, c := range []struct {
		key      string
		poolOp   corev1.NodeSelectorOperator
		poolVals []string
		podOp    corev1.NodeSelectorOperator
		podVals  []string
		valid    bool
	}{
		{"example.com/team", corev1.NodeSelectorOpExists, nil, corev1.NodeSelectorOpExists, nil, true},
		{"example.com/generation", corev1.NodeSelectorOpGt, []string{"3"}, corev1.NodeSelectorOpGt, []string{"5"}, true},
		{"example.com/generation", v1.NodeSelectorOpGte, []string{"3"}, corev1.NodeSelectorOpLt, []string{"10"}, true},
		{"team.example.kubernetes.io/x", corev1.NodeSelectorOpExists, nil, corev1.NodeSelectorOpExists, nil, false},
	} {
		p := pod("p", "1", nil)
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: c.key, Operator: c.podOp, Values: c.podVals}}}}}}}
		in := input(p)
		in.NodePools[0].NodePool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: c.key, Operator: c.poolOp, Values: c.poolVals}}
		res := solver.Solve(in)
		if len(res.NewNodeClaims) != 1 {
			t.Fatalf("%s %s: want one planned node, got %+v", c.key, c.poolOp, res)
		}
		err := verify.Verify(in, res)
		if c.valid && err != nil {
			t.Errorf("%s %s / pod %s: verifier rejects the plan: %v", c.key, c.poolOp, c.podOp, err)
		}
		if !c.valid && err == nil {
			t.Errorf("%s %s: verifier accepts a pod selecting a label the node will not carry", c.key, c.poolOp)
		}
	}
}
