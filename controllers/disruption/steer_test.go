package disruption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/test/env"
)

// hardMarked reports whether the node carries the planned-removal mark as a NoSchedule taint (the
// kube-scheduler binds no pod there), not as the PreferNoSchedule one of earlier releases.
func hardMarked(t *testing.T, kube client.Client, name string) bool {
	t.Helper()
	node := &corev1.Node{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool {
		return tn.Key == disruptionpolicy.PlannedRemovalTaintKey && tn.Effect == corev1.TaintEffectNoSchedule
	})
}

func TestMarkable(t *testing.T) {
	removals := map[string]bool{"a": true, "b": true}
	for _, tc := range []struct {
		name string
		held map[string]bool
		lift bool
		want []string
	}{
		{"every removal", nil, false, []string{"a", "b"}},
		{"not a node a command in flight holds", map[string]bool{"b": true, "c": true}, false, []string{"a"}},
		{"none while the marks are lifted", nil, true, nil},
	} {
		got := slices.Sorted(maps.Keys(markable(removals, tc.held, tc.lift)))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: marked %v, want %v", tc.name, got, tc.want)
		}
	}
}

// steerFixture is a command deleting node-a, whose pod (of a ReplicaSet) its plan puts on node-b or
// node-c (both protected, so they stay), executed by the second pass with a reservation; node-a's
// claim keeps a finalizer, as termination's would while it drains. It returns the loop, its clock,
// the command's destination and the other node.
func steerFixture(t *testing.T, kube client.Client) (*Controller, *clocktesting.FakeClock, string, string) {
	t.Helper()
	ctx := context.Background()
	np := resimPool("0s", "100%")
	create(t, kube, np)
	np.SetCondition(v1.ConditionTypeReady, metav1.ConditionTrue, "Test", "")
	if err := kube.Status().Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	const rs = types.UID("11111111-2222-3333-4444-555555555555")
	for _, n := range []string{"node-a", "node-b", "node-c"} {
		resimNode(t, kube, np, n)
	}
	ownedPod(t, kube, "app-1", "node-a", "1500m", rs)
	resimPod(t, kube, "node-b-app", "node-b", "1500m")
	resimPod(t, kube, "node-c-app", "node-c", "1500m")
	protectNode(t, kube, "node-b")
	protectNode(t, kube, "node-c")
	target := draining(t, kube, "node-a")
	c, _, _, clk := reservingLoop(kube)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.commands) != 1 || c.commands[0].targets[0].node != "node-a" || len(c.commands[0].plans) != 0 || len(c.commands[0].destinations) != 1 {
		t.Fatalf("want one command deleting node-a onto one node, got %d commands", len(c.commands))
	}
	dest := slices.Collect(maps.Keys(c.commands[0].destinations))[0]
	other := map[string]string{"node-b": "node-c", "node-c": "node-b"}[dest]
	if hardMarked(t, kube, dest) || hardMarked(t, kube, other) {
		t.Fatal("a node is marked before the command executes; nothing removes node-b or node-c")
	}
	clk.Step(c.opts.ValidationDelay + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: "node-a"}, target); err != nil || target.DeletionTimestamp.IsZero() {
		t.Fatalf("node-a's claim not deleted by the command (%v)", err)
	}
	return c, clk, dest, other
}

// While node-a drains, the node its plan did not put the pod on carries the NoSchedule mark, so the
// kube-scheduler can bind the re-created pod only on its planned destination (which a later command
// would otherwise find a moved pod on, or lose the room of); once the drain is over and
// destinationGrace has passed, the mark is gone. Without steering the other node stays unmarked
// and the kube-scheduler chooses between the two (LeastAllocated: the emptiest).
func TestDrainSteersEvictedPodsOntoTheirPlannedNode(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	c, clk, dest, other := steerFixture(t, kube)
	if !hardMarked(t, kube, other) {
		t.Errorf("%s is not marked NoSchedule while node-a drains; the plan put the pod on %s", other, dest)
	}
	if hardMarked(t, kube, dest) {
		t.Errorf("%s, the planned destination, is marked", dest)
	}
	// The drain ends: the claim goes.
	target := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "node-a"}, target); err != nil {
		t.Fatal(err)
	}
	stored := target.DeepCopy()
	target.Finalizers = nil
	if err := kube.Patch(ctx, target, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(destinationGrace + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if hardMarked(t, kube, other) {
		t.Errorf("%s still marked after the drain and its grace", other)
	}
}

// A pod no command evicted waits (a scale-up): the marks are lifted at once, so the kube-scheduler
// may bind it on any node with room and the provisioner buys nothing for it. The soft mark of
// earlier releases goes too. Without liftMarks the other node stays marked.
func TestForeignPendingPodLiftsTheMarks(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	c, _, dest, other := steerFixture(t, kube)
	if !hardMarked(t, kube, other) {
		t.Fatalf("%s not marked while node-a drains (the plan put the pod on %s)", other, dest)
	}
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: dest}, node); err != nil {
		t.Fatal(err)
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, disruptionpolicy.LegacyPlannedRemovalTaint)
	if err := kube.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	ownedPod(t, kube, "newcomer", "", "500m", "99999999-2222-3333-4444-555555555555")
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if hardMarked(t, kube, other) {
		t.Errorf("%s still marked while a pod no command evicted waits", other)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: dest}, node); err != nil {
		t.Fatal(err)
	}
	if disruptionpolicy.HasTaint(node, disruptionpolicy.LegacyPlannedRemovalTaint) {
		t.Error("the PreferNoSchedule mark of earlier releases was left on " + dest)
	}
}

// Steering marks every node an evicted pod could bind on, however many (150 here: the size switch
// steerMaxNodes = 100 left all of them unmarked), and only those: a node whose room left cannot
// take any evicted pod receives none, so it is not patched (before, every node was marked). Held
// nodes (the plan's destinations) stay open as before.
func TestSteeringMarksOnlyTheNodesAnEvictedPodCouldBindOn(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(nil, nil, nil, nil, nil, nil, clk, DefaultOptions())
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptrTrue()}
	pod := func(name, node, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	}
	cl := &cluster{nodes: map[string]*corev1.Node{}, podsByNode: map[string][]*corev1.Pod{}}
	addNode := func(name string, bound ...*corev1.Pod) {
		cl.nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}}}
		cl.claims = append(cl.claims, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeClaimStatus{NodeName: name}})
		cl.podsByNode[name] = bound
	}
	const roomy = 150
	for i := range roomy {
		addNode(fmt.Sprintf("roomy-%03d", i))
	}
	addNode("full", pod("filler", "full", "3500m"))
	addNode("dest")
	c.ownReserved["cmd"] = &ownReservation{drained: []string{"drained"}, evicted: []*corev1.Pod{pod("web-1", "drained", "1"), pod("web-2", "drained", "1")}}
	out, noRoom := c.withSteering(cl, map[string]bool{"later": true}, map[string]bool{"dest": true}, false)
	marked := 0
	for i := range roomy {
		if out[fmt.Sprintf("roomy-%03d", i)] {
			marked++
		}
	}
	if marked != roomy {
		t.Errorf("%d of the %d nodes with room for the evicted pods marked, want all", marked, roomy)
	}
	if out["full"] || noRoom != 1 {
		t.Errorf("the node without room for an evicted pod: marked %t (noRoom %d), want unmarked and counted", out["full"], noRoom)
	}
	if out["dest"] || !out["later"] {
		t.Errorf("held destination marked %t, look-ahead mark kept %t", out["dest"], out["later"])
	}
	// The drain is over and destinationGrace has passed: the look-ahead's marks alone.
	c.ownReserved["cmd"].goneAt = clk.Now()
	clk.Step(destinationGrace)
	if out, _ := c.withSteering(cl, map[string]bool{"later": true}, nil, false); len(out) != 1 {
		t.Errorf("%d nodes marked after the drain and its grace, want the look-ahead's 1", len(out))
	}
}

// staleNodes answers Get of a node with the copy it holds, as a cache that has not seen the last
// write yet.
type staleNodes struct {
	client.Client
	stale map[string]*corev1.Node
}

func (s staleNodes) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if n, ok := obj.(*corev1.Node); ok && s.stale[key.Name] != nil {
		s.stale[key.Name].DeepCopyInto(n)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// The look-ahead marks a node and the same pass's command taints it: the cache may not have seen
// the mark yet, and the optimistic-lock patch made from it conflicts. setNodeTaint reads the node
// again from the apiserver and patches once more (the scale-down bench lost a command to it:
// "tainting failed"). Without the retry the taint is not set and the error is returned.
func TestTaintRetriesAConflictFromAStaleCache(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := resimPool("0s", "100%")
	create(t, kube, np)
	resimNode(t, kube, np, "node-a")
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "node-a"}, node); err != nil {
		t.Fatal(err)
	}
	stale := node.DeepCopy()
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, disruptionpolicy.PlannedRemovalTaint)
	if err := kube.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(staleNodes{Client: kube, stale: map[string]*corev1.Node{"node-a": stale}}, kube, noDrift{}, listSnapshot{kube}, nil, nil, clk, DefaultOptions())
	if err := c.setTaint(ctx, "node-a", true); err != nil {
		t.Fatalf("tainting a node the cache holds a stale copy of: %v", err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: "node-a"}, node); err != nil {
		t.Fatal(err)
	}
	if !disruptionpolicy.HasDisruptedTaint(node) || !disruptionpolicy.HasTaint(node, disruptionpolicy.PlannedRemovalTaint) {
		t.Errorf("taints %v, want karpenter.sh/disrupted added and the planned-removal mark kept", node.Spec.Taints)
	}
}
