package disruption_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers"
	"github.com/joist-dev/joist/controllers/disruption"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

type undrifted struct{ cloudprovider.CloudProvider }

func (undrifted) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}

type noPlan struct{}

func (noPlan) ClusterSnapshot(context.Context) (solver.Input, error) { return solver.Input{}, nil }

// The manager's cache trims nodes (images, managed fields); the disruption loop reads that cache
// and writes the node it releases. The write must carry only the taint: the node's images and a
// label Joist knows nothing about survive on the server.
func TestTrimmedNodeKeepsItsFieldsThroughATaintLift(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx, _, kube := e.StartTestCache(t, controllers.CacheOptions(), nil)
	direct := e.Client
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
		NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}}}}
	must(t, direct.Create(ctx, np))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general", "team.example.com/owner": "payments"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://node-a", Taints: []corev1.Taint{v1.DisruptedNoScheduleTaint}}}
	must(t, direct.Create(ctx, node))
	node.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example.com/app:1"}, SizeBytes: 1 << 20}}
	must(t, direct.Status().Update(ctx, node))
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef}}
	must(t, direct.Create(ctx, nc))
	nc.Status.NodeName, nc.Status.ProviderID = "node-a", "kwok://node-a"
	nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
	must(t, direct.Status().Update(ctx, nc))

	// Wait until the cache has the node, trimmed.
	cached := &corev1.Node{}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return kube.Get(ctx, client.ObjectKey{Name: "node-a"}, cached) == nil && len(cached.Spec.Taints) > 0, nil
	}); err != nil {
		t.Fatal("the cache never showed node-a")
	}
	if len(cached.Status.Images) != 0 {
		t.Fatalf("the cache holds the node's images %v: the transform is not applied", cached.Status.Images)
	}
	c := disruption.New(kube, direct, undrifted{}, noPlan{}, nil, events.NewFakeRecorder(100), clock.RealClock{}, disruption.DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Node{}
	must(t, direct.Get(ctx, client.ObjectKey{Name: "node-a"}, got))
	if disruptionpolicy.HasDisruptedTaint(got) {
		t.Fatalf("node still tainted %v: the pass did not release it, so the test checked nothing", got.Spec.Taints)
	}
	if len(got.Status.Images) != 1 || got.Labels["team.example.com/owner"] != "payments" {
		t.Errorf("after the taint lift the node has images %v and labels %v: the write erased fields the cache trims", got.Status.Images, got.Labels)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
