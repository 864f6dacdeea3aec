package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/snapshot"
)

// TestStaleJoistNominationAfterRestart: a pod still carries the nomination Joist wrote before it
// restarted, to the node of a claim that no longer holds nominations (initialized longer ago than
// the nomination TTL), and does not fit there. The restarted Joist, which remembers nothing, must
// tell from the field's manager that the nomination is its own and stale, not a kube-scheduler
// preemption, and launch a node for the pod. (preemptionPolicy Never keeps the scheduler from
// clearing the field on its failed attempts, as it leaves it whenever preemption is not tried.)
func TestStaleJoistNominationAfterRestart(t *testing.T) {
	s := newStack(t, kwokOptions())
	s.args = append(s.args, "--nomination-ttl=1s")
	ctx := s.ctx(3 * time.Minute)
	base := deployment("base", 1, "1", "1Gi")
	s.create(ctx, kwokNodeClass(0), kwokNodePool("general", nil), base)
	s.startManager()
	s.waitRunning(ctx, 1, base.Spec.Template.Labels)
	claims := s.claims()
	if len(claims) != 1 || claims[0].Status.NodeName == "" {
		t.Fatalf("want one launched claim with a node\n%s", s.describeClaims())
	}
	nodeName := claims[0].Status.NodeName
	node := &corev1.Node{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		t.Fatal(err)
	}
	s.stopManager()

	// Too big for the node's free room, small enough for a bigger type.
	cpu := node.Status.Allocatable.Cpu().DeepCopy()
	// Pods take their preemption policy from their PriorityClass (admission refuses setting it).
	never := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "no-preemption"}, Value: 0,
		PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	late := deployment("late", 1, cpu.String(), "1Gi", func(spec *corev1.PodSpec) {
		spec.PriorityClassName = never.Name
	})
	s.create(ctx, never, late)
	var pod corev1.Pod
	s.eventually(ctx, "late pod marked unschedulable", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := s.kube.List(ctx, pods, client.MatchingLabels(late.Spec.Template.Labels)); err != nil || len(pods.Items) != 1 {
			return false, err
		}
		pod = pods.Items[0]
		return snapshot.MarkedUnschedulable(&pod), nil
	}, func() string { return describePending([]corev1.Pod{pod}) })
	// What Joist's nomination write left before the restart.
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, nodeName)))
	if err := s.kube.Status().Patch(ctx, &pod, patch, client.FieldOwner(snapshot.NominationFieldManager)); err != nil {
		t.Fatal(err)
	}
	// Wait until the claim's nomination TTL (1 s) has run out by its own Initialized timestamp
	// (whole seconds, hence the extra second) rather than for a fixed time.
	initialized := claims[0].GetCondition(v1.ConditionTypeInitialized)
	if initialized == nil {
		t.Fatalf("claim %s has no Initialized condition\n%s", claims[0].Name, s.describeClaims())
	}
	s.eventually(ctx, "the nomination TTL to run out", func(context.Context) (bool, error) {
		return time.Since(initialized.LastTransitionTime.Time) > 2*time.Second, nil
	}, s.describeClaims)
	s.startManager()
	running := s.waitRunning(ctx, 1, late.Spec.Template.Labels)
	if running[0].Spec.NodeName == nodeName {
		t.Errorf("late pod ran on the full node %s", nodeName)
	}
	if n := len(s.claims()); n < 2 {
		t.Errorf("%d nodeclaims, want a second one launched for the late pod\n%s", n, s.describeClaims())
	}
}
