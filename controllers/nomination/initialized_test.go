package nomination

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// The patch that releases a node also labels it karpenter.sh/initialized when the release leaves
// nothing else its claim waits for, saving the NodeClaim lifecycle a Node write; a node that still
// carries one of its claim's startup taints is released unlabeled.
func TestReleaseLabelsTheNodeInitializedWhenNothingElseIsAwaited(t *testing.T) {
	h := start(t, DefaultOptions())
	h.claimWithNode(t, "node-a", "batch-1", true)
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	h.claimWithStartupTaint(t, "node-b", "batch-1", startup)

	eventually(t, "both nodes released", 20*time.Second, func() (bool, string) {
		a, b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
		h.get(t, a)
		h.get(t, b)
		return !tainted(a) && !tainted(b), fmt.Sprintf("node-a tainted %v, node-b tainted %v", tainted(a), tainted(b))
	})
	a, b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	h.get(t, a)
	h.get(t, b)
	if a.Labels[v1.NodeInitializedLabelKey] != "true" {
		t.Errorf("node-a labels %v: released Ready with nothing else awaited, want %s=true", a.Labels, v1.NodeInitializedLabelKey)
	}
	if _, ok := b.Labels[v1.NodeInitializedLabelKey]; ok {
		t.Errorf("node-b labeled initialized while its startup taint is on it: labels %v, taints %v", b.Labels, b.Spec.Taints)
	}
}

// claimWithStartupTaint is claimWithNode (Ready) for a claim with a startup taint its node carries.
func (h *harness) claimWithStartupTaint(t *testing.T, name, batch string, startup corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	providerID := "kwok://" + name
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.ProvisioningBatchLabelKey: batch}},
		Spec: v1.NodeClaimSpec{StartupTaints: []corev1.Taint{startup}, Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}}
	if err := h.direct.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName = providerID, name
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	if err := h.direct.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if err := h.direct.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = []corev1.Taint{v1.UnregisteredNoExecuteTaint, startup}
	if err := h.direct.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	h.setReady(t, name, true)
}
