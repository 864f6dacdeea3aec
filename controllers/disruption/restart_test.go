package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// noDrift is a cloud whose instances never drift; nothing else of it is called here.
type noDrift struct{ cloudprovider.CloudProvider }

func (noDrift) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

// emptySnapshot plans nothing.
type emptySnapshot struct{}

func (emptySnapshot) ClusterSnapshot(context.Context) (solver.Input, error) {
	return solver.Input{}, nil
}

// A manager that restarts mid-command finds a node tainted karpenter.sh/disrupted and its claim
// Disrupting with no command of its own: its first pass releases both, and the same pass's status
// write (Consolidatable, lastPodEventTime) does not put the Disrupting condition back from the copy
// it read before the release.
func TestRestartReleasesUnfinishedCommandInOnePass(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}},
		Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			ConsolidateAfter: v1.MustParseNillableDuration("0s"), Budgets: []v1.Budget{{Nodes: "100%"}}},
	}}
	create(t, kube, np)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://node-a", Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}
	create(t, kube, node)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"},
		Annotations: map[string]string{v1.NodePoolHashAnnotationKey: np.Hash(), v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}},
		Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef}}
	create(t, kube, nc)
	nc.Status.NodeName, nc.Status.ProviderID = "node-a", "kwok://node-a"
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.SetCondition(c, metav1.ConditionTrue, c, "")
	}
	nc.SetCondition(v1.ConditionTypeConsolidatable, metav1.ConditionTrue, v1.ConsolidatableReason, "")
	nc.SetCondition(v1.ConditionTypeDisrupting, metav1.ConditionTrue, string(v1.DisruptionReasonUnderutilized), "the dead process's command")
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}

	c := New(kube, kube, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if disruptionpolicy.HasDisruptedTaint(node) {
		t.Errorf("node still tainted: %v", node.Spec.Taints)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	if d := nc.GetCondition(v1.ConditionTypeDisrupting); d != nil {
		t.Errorf("claim still carries Disrupting=%s (%s) after the releasing pass", d.Status, d.Message)
	}
}

func create(t *testing.T, kube client.Client, obj client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
