package disruption

import (
	"context"
	"strings"
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
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// listSnapshot builds the solver input from a direct read of the apiserver with the one snapshot
// builder, as the provisioner does from its cache.
type listSnapshot struct{ kube client.Client }

func (s listSnapshot) ClusterSnapshot(ctx context.Context) (solver.Input, error) {
	var (
		pools  v1.NodePoolList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
	)
	for _, l := range []client.ObjectList{&pools, &claims, &nodes, &pods} {
		if err := s.kube.List(ctx, l); err != nil {
			return solver.Input{}, err
		}
	}
	snap, err := snapshot.Build(snapshot.Cluster{NodePools: pointers(pools.Items), NodeClaims: pointers(claims.Items),
		Nodes: pointers(nodes.Items), Pods: pointers(pods.Items)},
		snapshot.Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return catalog.Default(), nil }})
	if err != nil {
		return solver.Input{}, err
	}
	return snap.Input, nil
}

const resimType = "c-4x-amd64-linux"

// resimPool is the pool "general" of resimType on-demand nodes the re-simulation tests share, with
// the consolidateAfter and node budget each test needs.
func resimPool(consolidateAfter, budget string) *v1.NodePool {
	return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{resimType}},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}},
		Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			ConsolidateAfter: v1.MustParseNillableDuration(consolidateAfter), Budgets: []v1.Budget{{Nodes: budget}}},
	}}
}

func resimNode(t *testing.T, kube client.Client, np *v1.NodePool, name string) {
	t.Helper()
	resimNodeOf(t, kube, np, name, resimType, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("6Gi"),
		corev1.ResourcePods: resource.MustParse("64")})
}

// resimNodeOf is resimNode with an instance type and its allocatable.
func resimNodeOf(t *testing.T, kube client.Client, np *v1.NodePool, name, instanceType string, allocatable corev1.ResourceList) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{v1.NodePoolLabelKey: np.Name, v1.LabelInstanceType: instanceType, v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand,
		v1.LabelTopologyZone: "test-zone-a", v1.LabelArch: "amd64", v1.LabelOS: "linux", v1.LabelHostname: name}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
	create(t, kube, node)
	node.Spec.Taints = nil // the apiserver's TaintNodesByCondition added not-ready; the node is ready
	if err := kube.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node.Status.Allocatable = allocatable
	node.Status.Capacity = node.Status.Allocatable
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
		Annotations: map[string]string{v1.NodePoolHashAnnotationKey: np.Hash(), v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}},
		Spec: v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef}}
	create(t, kube, nc)
	nc.Status.NodeName, nc.Status.ProviderID = name, "kwok://"+name
	nc.Status.Allocatable, nc.Status.Capacity = node.Status.Allocatable, node.Status.Allocatable
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		nc.SetCondition(c, metav1.ConditionTrue, c, "")
	}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
}

// protectNode gives the node karpenter.sh/do-not-disrupt: it stays, a destination for the pods of
// the nodes a test's command takes.
func protectNode(t *testing.T, kube client.Client, name string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	stored := node.DeepCopy()
	node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	if err := kube.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
}

func resimPod(t *testing.T, kube client.Client, name, node, cpu string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "c", Image: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	create(t, kube, pod)
	pod.Status.Phase = corev1.PodRunning
	if err := kube.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// Two half-used nodes: the plan deletes one and moves its pod onto the other. During the validation
// delay the kube-scheduler binds a pod onto the destination, taking the room. Re-simulated before
// the delete, the command no longer holds: it is abandoned — the node untainted, its claim kept and
// unmarked — instead of evicting a pod into a cluster with no room for it.
func TestCommandReSimulatedBeforeDelete(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := resimPool("0s", "100%")
	create(t, kube, np)
	for _, n := range []string{"node-a", "node-b"} {
		resimNode(t, kube, np, n)
		resimPod(t, kube, n+"-app", n, "1500m")
	}
	// node-b is the destination: protected, so the plan is "delete node-a, its pod onto node-b".
	protectNode(t, kube, "node-b")

	clk := clocktesting.NewFakeClock(time.Now().Add(time.Minute))
	recorder := events.NewFakeRecorder(100)
	c := New(kube, kube, noDrift{}, listSnapshot{kube}, nil, recorder, clk, DefaultOptions())
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.commands) != 1 || len(c.commands[0].targets) != 1 {
		for _, cmd := range c.commands {
			t.Logf("command %s: %s, targets %+v, replacements %d", cmd.reason, cmd.message, cmd.targets, len(cmd.plans))
		}
		t.Fatalf("want one command deleting one node, got %d", len(c.commands))
	}
	target := c.commands[0].targets[0].node
	if target != "node-a" || len(c.commands[0].plans) != 0 {
		t.Fatalf("want the command to delete node-a onto node-b, got %s", c.commands[0].message)
	}
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: target}, node); err != nil || !disruptionpolicy.HasDisruptedTaint(node) {
		t.Fatalf("target %s not tainted (%v)", target, err)
	}

	resimPod(t, kube, "late", "node-b", "2") // the scheduler fills the destination during the delay
	clk.Step(c.opts.ValidationDelay + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	nc := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: target}, nc); err != nil {
		t.Fatal(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		t.Fatalf("claim %s deleted although its pod no longer fits on node-b", target)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: target}, node); err != nil {
		t.Fatal(err)
	}
	if disruptionpolicy.HasDisruptedTaint(node) || nc.IsTrue(v1.ConditionTypeDisrupting) {
		t.Errorf("abandoned command left node %s tainted (%t) or its claim Disrupting (%t)", target,
			disruptionpolicy.HasDisruptedTaint(node), nc.IsTrue(v1.ConditionTypeDisrupting))
	}
	found := false
	for len(recorder.Events) > 0 {
		ev := <-recorder.Events
		found = found || (strings.Contains(ev, "Abandoned") && strings.Contains(ev, "no longer fit"))
	}
	if !found {
		t.Error("no event says the command was abandoned because its pods no longer fit")
	}
}
