package disruption

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/kwok"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/controllers/provisioning"
	"github.com/joist-dev/joist/controllers/state"
	"github.com/joist-dev/joist/test/env"
)

// ownedPod is a pod of the ReplicaSet rs (UID rsUID), bound to node or pending ("").
func ownedPod(t *testing.T, kube client.Client, name, node, cpu string, rsUID types.UID) *corev1.Pod {
	t.Helper()
	isController := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app", UID: rsUID, Controller: &isController}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	create(t, kube, pod)
	if node != "" {
		pod.Status.Phase = corev1.PodRunning
		if err := kube.Status().Update(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
	}
	return pod
}

// A consolidation command deletes node-a and plans its pod (of a ReplicaSet) onto node-b. While
// node-a drains, the room on node-b stays the pod's: a pod arriving meanwhile that would fit there is
// given a node of its own. Once the pod is evicted, its re-creation takes the reservation — it counts
// on node-b — and the provisioner launches nothing for it. Without the reservation the newcomer takes
// node-b's room and a node is bought for the evicted pod instead.
func TestEvictedPodLandsWhereThePlanPutIt(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := e.Client
	np := resimPool("0s", "100%")
	create(t, kube, np)
	np.SetCondition(v1.ConditionTypeReady, metav1.ConditionTrue, "Test", "")
	if err := kube.Status().Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	const rs = types.UID("11111111-2222-3333-4444-555555555555")
	resimNode(t, kube, np, "node-a")
	resimNode(t, kube, np, "node-b")
	app := ownedPod(t, kube, "app-1", "node-a", "1500m", rs)
	resimPod(t, kube, "node-b-app", "node-b", "1500m")
	// node-b is the destination: protected, so the plan is "delete node-a, its pod onto node-b".
	protectNode(t, kube, "node-b")
	// node-a's claim keeps a finalizer, as termination's would while it drains.
	target := draining(t, kube, "node-a")
	c, prov, noms, clk := reservingLoop(kube)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.commands) != 1 || c.commands[0].targets[0].node != "node-a" || len(c.commands[0].plans) != 0 {
		t.Fatalf("want one command deleting node-a onto node-b, got %d commands", len(c.commands))
	}
	clk.Step(c.opts.ValidationDelay + time.Second)
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: "node-a"}, target); err != nil || target.DeletionTimestamp.IsZero() {
		t.Fatalf("node-a's claim not deleted by the command (%v)", err)
	}

	// While node-a drains, its pod counts on node-b.
	in, err := prov.ClusterSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := false
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			held = held || (n.Name == "node-b" && p.UID == app.UID)
		}
	}
	if !held {
		t.Fatal("the draining pod does not count on node-b, the node its command planned it onto")
	}

	// A newcomer that would fit node-b's free room arrives during the drain.
	newcomer := ownedPod(t, kube, "newcomer", "", "2", "99999999-2222-3333-4444-555555555555")
	if err := prov.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if claim, _ := noms.NominationOf(newcomer, "", nil); claim == "node-b" {
		t.Fatal("the newcomer was planned into the room reserved for the evicted pod")
	}
	claimsBefore := countClaims(t, kube)

	// The drain evicts the pod; its ReplicaSet re-creates it.
	if err := kube.Delete(ctx, app, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	recreated := ownedPod(t, kube, "app-2", "", "1500m", rs)
	if err := prov.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if claim, _ := noms.NominationOf(recreated, "", nil); claim != "node-b" {
		t.Errorf("the re-created pod counts on %q, want node-b (its reservation)", claim)
	}
	if n := countClaims(t, kube); n != claimsBefore {
		t.Errorf("%d nodeclaims launched for the re-created pod, want 0: the plan already has its room", n-claimsBefore)
	}
}

// draining gives the claim a finalizer, as termination's would while it drains, and returns it.
func draining(t *testing.T, kube client.Client, name string) *v1.NodeClaim {
	t.Helper()
	ctx := context.Background()
	target := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, target); err != nil {
		t.Fatal(err)
	}
	stored := target.DeepCopy()
	target.Finalizers = []string{"test.joist.dev/draining"}
	if err := kube.Patch(ctx, target, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	return target
}

// reservingLoop is a disruption loop with a real provisioner and nomination controller (reserving
// the room of executing commands). Those run on real time (the nodes initialized just now); the
// loop's clock starts a minute ahead so consolidateAfter has passed.
func reservingLoop(kube client.Client) (*Controller, *provisioning.Provisioner, *nomination.Controller, *clocktesting.FakeClock) {
	pclk := clocktesting.NewFakeClock(time.Now())
	noms := nomination.New(kube, nil, state.NewNominations(), func() {}, pclk, nomination.DefaultOptions())
	cloud := kwok.New(kube, cloudprovider.NewUnavailableOfferings(pclk, 0), kwok.Options{InstanceTypes: catalog.Default()})
	prov := provisioning.New(kube, nil, cloud, noms, events.NewFakeRecorder(1000), pclk, provisioning.DefaultOptions())
	clk := clocktesting.NewFakeClock(time.Now().Add(time.Minute))
	return New(kube, kube, noDrift{}, prov, noms, events.NewFakeRecorder(100), clk, DefaultOptions()), prov, noms, clk
}

func countClaims(t *testing.T, kube client.Client) int {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := kube.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}
