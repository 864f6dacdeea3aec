package claimtemplate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/requirements"
	"github.com/joist-dev/joist/solver"
)

// TestNodeClaimLabelsFromPoolOwnRequirements: the NodeClaim (and so its node) carries a label for
// each key only the pool's requirements define and demand — In, Exists, Gt — so pods selecting it
// schedule on the node the solver planned for them. Keys the catalog defines, restricted domains and
// requirements that absence satisfies add no label; template labels win.
func TestNodeClaimLabelsFromPoolOwnRequirements(t *testing.T) {
	t.Parallel()
	types := []*catalog.InstanceType{{
		Name: "m.xlarge", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
		Labels:    map[string]string{v1.LabelArch: "amd64", "example.com/family": "m"},
		Offerings: []catalog.Offering{{Zone: "z1", CapacityType: v1.CapacityTypeOnDemand, Price: 0.2, Available: true}},
	}}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Labels = map[string]string{"example.com/owner": "platform"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: "example.com/team", Operator: corev1.NodeSelectorOpExists},
		{Key: "example.com/generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"3"}},
		{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold", "bronze"}},
		{Key: "example.com/legacy", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"yes"}},
		{Key: "example.com/family", Operator: corev1.NodeSelectorOpExists},
		{Key: "example.com/owner", Operator: corev1.NodeSelectorOpExists},
		{Key: "sub.k8s.io/restricted", Operator: corev1.NodeSelectorOpExists},
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "example.com/team", Operator: corev1.NodeSelectorOpExists},
				{Key: "example.com/generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}},
				{Key: "example.com/tier", Operator: corev1.NodeSelectorOpIn, Values: []string{"gold"}},
			}}}}}},
	}}
	res := solver.Solve(solver.Input{Pods: []*corev1.Pod{p}, NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: types}}})
	if len(res.NewNodeClaims) != 1 {
		t.Fatalf("want one planned node, got %+v", res)
	}
	nc := NodeClaim(np, &res.NewNodeClaims[0], requirements.Known(types))
	want := map[string]string{
		v1.NodePoolLabelKey: "general", "example.com/owner": "platform",
		"example.com/team": "0", "example.com/generation": "6", "example.com/tier": "gold",
	}
	if len(nc.Labels) != len(want) {
		t.Errorf("labels = %v, want %v", nc.Labels, want)
	}
	for k, v := range want {
		if nc.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, nc.Labels[k], v, nc.Labels)
		}
	}
	// The node the cloud registers: the claim's labels plus the instance type's.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1.LabelArch: "amd64", "example.com/family": "m"}}}
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(node); !ok || err != nil {
		t.Errorf("the pod's node affinity does not match its planned node's labels %v (%v)", node.Labels, err)
	}
}
