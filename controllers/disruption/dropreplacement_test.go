package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// node-a (4 vCPU) runs one 1.5-vCPU pod; node-b, protected, has too little room for it. The plan
// replaces node-a by a 2-vCPU node. While the replacement boots, node-b's pod goes (a scale-down
// still under way): node-a's pod now fits on node-b. The command executes without the replacement
// — it is deleted before any pod moves — instead of moving the pod onto it and a later command
// consolidating it away, evicting the pod a second time. Without the check the replacement stayed.
func TestReplacementNotNeededAnyMoreIsDroppedBeforeTheMove(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := resimPool("0s", "100%")
	np.Spec.Template.Spec.Requirements[0].Values = []string{resimType, "c-2x-amd64-linux"}
	create(t, kube, np)
	resimNode(t, kube, np, "node-a")
	resimNode(t, kube, np, "node-b")
	resimPod(t, kube, "node-a-app", "node-a", "1500m")
	resimPod(t, kube, "node-b-app", "node-b", "3")
	protectNode(t, kube, "node-b")

	clk := clocktesting.NewFakeClock(time.Now().Add(time.Minute))
	c := New(kube, kube, noDrift{}, listSnapshot{kube}, nil, events.NewFakeRecorder(100), clk, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.commands) != 1 || c.commands[0].targets[0].node != "node-a" || len(c.commands[0].replacements) != 1 {
		t.Fatalf("want one command replacing node-a by one node, got %d commands", len(c.commands))
	}
	replacement := c.commands[0].replacements[0]
	initializeReplacement(t, kube, replacement, c.commands[0].plans[0].InstanceType)

	// node-b's pod goes while the replacement boots.
	if err := kube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "node-b-app", Namespace: "default"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	clk.Step(c.opts.ValidationDelay + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	for name, why := range map[string]string{"node-a": "the command did not execute", replacement: "the replacement its pod no longer needs was kept"} {
		nc := &v1.NodeClaim{}
		err := kube.Get(ctx, client.ObjectKey{Name: name}, nc)
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		if err == nil && nc.DeletionTimestamp.IsZero() {
			t.Errorf("claim %s not deleted: %s", name, why)
		}
	}
}

// initializeReplacement registers the Node of a replacement claim the loop launched (no KWOK here)
// and marks the claim Initialized.
func initializeReplacement(t *testing.T, kube client.Client, name string, it *catalog.InstanceType) {
	t.Helper()
	ctx := context.Background()
	nc := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: "test-zone-a", v1.LabelArch: "amd64", v1.LabelOS: "linux",
		v1.LabelInstanceType: it.Name, v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
	create(t, kube, node)
	node.Spec.Taints = nil
	if err := kube.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node.Status.Allocatable, node.Status.Capacity = it.Allocatable(), it.Allocatable()
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	nc.Status.NodeName, nc.Status.ProviderID = name, "kwok://"+name
	nc.Status.Allocatable, nc.Status.Capacity = node.Status.Allocatable, node.Status.Allocatable
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.SetCondition(c, metav1.ConditionTrue, c, "")
	}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
}

// Two commands in flight: node "spare" is the other command's replacement (held), with room for
// this command's pod. This command's replacement may not be dropped onto it — that room is the
// other command's plan — only onto a node no other command holds. Without the held check the crash
// trial's two concurrent commands each dropped their replacements onto the other's.
func TestReplacementNotDroppedOntoAnotherCommandsRoom(t *testing.T) {
	node := func(name string) solver.ExistingNode {
		return solver.ExistingNode{Name: name, NodeClaim: name, Labels: map[string]string{v1.LabelHostname: name},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods: resource.MustParse("10")}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "app"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	repl := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "repl"}}
	repl.Status.NodeName = "repl"
	cl := &cluster{claims: []*v1.NodeClaim{repl}, podsByNode: map[string][]*corev1.Pod{}}
	cmd := &command{replacements: []string{"repl"}, destinations: map[string]bool{}}
	sub := solver.Input{Nodes: []solver.ExistingNode{node("repl"), node("spare")}, Pods: []*corev1.Pod{pod}}

	if _, unneeded := unneededReplacements(cl, cmd, sub, nil, map[string]bool{"spare": true}); len(unneeded) != 0 {
		t.Errorf("dropped %v onto the room of another command's replacement", unneeded)
	}
	if _, unneeded := unneededReplacements(cl, cmd, sub, nil, nil); len(unneeded) != 1 {
		t.Errorf("dropped %v, want repl: its pod fits on spare, which no other command holds", unneeded)
	}
}
