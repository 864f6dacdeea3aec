package nomination

import (
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
	h := start(t, nominating())
	h.claimWithNode(t, "node-a", "batch-1", true)
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	h.claimWithStartupTaints(t, "node-b", "batch-1", true, startup)

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
