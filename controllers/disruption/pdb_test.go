package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy/pdbcases"
	"github.com/joist-dev/joist/test/env"
)

// TestPDBCasesThroughTheAPIServer runs the shared PDB table through the controller's own read of a
// real apiserver (selectors as stored — {} and nil kept apart — statuses as written): the node is
// blocked by exactly the PDB the case names, or not at all.
func TestPDBCasesThroughTheAPIServer(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	for _, ns := range []string{pdbcases.Namespace, "other"} {
		create(t, kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}},
		Disruption: v1.Disruption{ConsolidateAfter: v1.MustParseNillableDuration("0s"), Budgets: []v1.Budget{{Nodes: "100%"}}},
	}}
	create(t, kube, np)
	create(t, kube, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://node-a"}})
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{v1.NodePoolLabelKey: "general"}},
		Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef}}
	create(t, kube, nc)
	nc.Status.NodeName, nc.Status.ProviderID = "node-a", "kwok://node-a"
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.SetCondition(c, metav1.ConditionTrue, c, "")
	}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	c := New(kube, kube, noDrift{}, emptySnapshot{}, nil, events.NewFakeRecorder(100), clock.RealClock{}, DefaultOptions())

	for _, tc := range pdbcases.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			pod := tc.NewPod("web-0", "node-a")
			status := pod.Status
			create(t, kube, pod)
			pod.Status = status
			if err := kube.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			var created []client.Object
			for i := range tc.PDBs {
				b := tc.PDBs[i].DeepCopy()
				status := b.Status
				create(t, kube, b)
				b.Status = status
				b.Status.ObservedGeneration = b.Generation
				if err := kube.Status().Update(ctx, b); err != nil {
					t.Fatal(err)
				}
				created = append(created, b)
			}
			t.Cleanup(func() {
				for _, obj := range append(created, pod) {
					_ = kube.Delete(ctx, obj, client.GracePeriodSeconds(0))
				}
			})

			cl, err := c.readCluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			members := c.members(cl, time.Now())
			if len(members) != 1 {
				t.Fatalf("want node-a as the one member, got %d", len(members))
			}
			got := members[0].blocked
			switch {
			case tc.BlockedBy == "" && got != "":
				t.Errorf("node blocked by %q, want nothing", got)
			case tc.BlockedBy != "" && (!strings.Contains(got, "PodDisruptionBudget") || !strings.Contains(got, tc.BlockedBy)):
				t.Errorf("node blocked by %q, want PodDisruptionBudget %s", got, tc.BlockedBy)
			}
		})
	}
}
