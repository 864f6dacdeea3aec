package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

func TestClusterLimitHeadroom(t *testing.T) {
	t.Parallel()
	gs := []v1alpha1.Guardrail{
		guardrail("loose", v1alpha1.GuardrailSpec{ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("200"), Memory: q("1Ti"), Action: v1alpha1.ActionOff}}),
		guardrail("tight", v1alpha1.GuardrailSpec{ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("100"), Nodes: ptr(int64(3))}}),
	}
	h := ClusterLimitHeadroom(gs, rl("cpu", "90", "memory", "100Gi"), 2)
	if !h.Limited() {
		t.Fatal("headroom should be limited")
	}
	if got := h.Remaining[corev1.ResourceCPU]; got.String() != "10" {
		t.Errorf("cpu remaining = %s, want 10 (lowest ceiling 100 less 90)", got.String())
	}
	if got := h.Remaining[corev1.ResourceMemory]; got.String() != "924Gi" {
		t.Errorf("memory remaining = %s, want 924Gi", got.String())
	}
	if h.NodesRemaining == nil || *h.NodesRemaining != 1 {
		t.Errorf("nodes remaining = %v, want 1", h.NodesRemaining)
	}
	if h.Sources[corev1.ResourceCPU] != `Guardrail "tight" clusterLimits.cpu=100` {
		t.Errorf("cpu source = %q", h.Sources[corev1.ResourceCPU])
	}
	if ok, reason := h.Fits(rl("cpu", "8", "memory", "32Gi")); !ok {
		t.Errorf("8 cpu should fit: %s", reason)
	}
	ok, reason := h.Fits(rl("cpu", "16", "memory", "32Gi"))
	want := `launching a node with 16 cpu would exceed the cluster-wide limit (Guardrail "tight" clusterLimits.cpu=100): 10 left`
	if ok || reason != want {
		t.Errorf("16 cpu: ok %v reason %q, want %q", ok, reason, want)
	}
	h.Subtract(rl("cpu", "8"))
	ok, reason = h.Fits(rl("cpu", "1"))
	if ok || reason != `cluster-wide node limit reached (Guardrail "tight" clusterLimits.nodes=3): no node may be added` {
		t.Errorf("after one launch: ok %v reason %q", ok, reason)
	}
	if got := h.Remaining[corev1.ResourceCPU]; got.String() != "2" {
		t.Errorf("cpu after subtract = %s", got.String())
	}

	none := ClusterLimitHeadroom(nil, rl("cpu", "1000"), 500)
	if none.Limited() || none.Remaining != nil || none.NodesRemaining != nil {
		t.Errorf("no guardrail must mean unlimited: %+v", none)
	}
	if ok, _ := none.Fits(rl("cpu", "1000")); !ok {
		t.Error("unlimited headroom must fit anything")
	}
	over := ClusterLimitHeadroom(gs, rl("cpu", "150"), 5)
	if got := over.Remaining[corev1.ResourceCPU]; got.Sign() != 0 || *over.NodesRemaining != 0 {
		t.Errorf("over the ceiling must clamp to 0: cpu %s nodes %d", got.String(), *over.NodesRemaining)
	}
}
