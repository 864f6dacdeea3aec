package termination

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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joist-dev/joist/test/env"
)

// ownedPod is a pod of the ReplicaSet rs requesting cpu, bound to node ("" for pending).
func ownedPod(name, node, cpu string, rs types.UID) *corev1.Pod {
	p := runningPod(name, node, 30, nil)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(rs), UID: rs, Controller: ptr.To(true)}}
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return p
}

// One command deletes node-a (a 500m pod) and node-b (a 4-cpu pod). Its plan put the big pod on the
// replacement and the small one in a gap elsewhere; if the small pod were re-created first, the
// kube-scheduler could put it on the replacement and strand the big one. So the small pod is not
// evicted while the big one waits on the other node, nor while the big one's re-creation is
// pending; once that landed, it is. Without the ordering node-a's first drain evicts the small pod.
func TestCommandEvictsLargestPodsFirst(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := byProviderID{e.Client}
	record := `{"id":"node-a-1","reason":"Underutilized","targets":["node-a","node-b"]}`
	nodeA, _ := deletingNode(t, kube, "node-a", nil, record)
	nodeB, _ := deletingNode(t, kube, "node-b", nil, record)
	small, big := ownedPod("small", "node-a", "500m", "rs-small"), ownedPod("big", "node-b", "4", "rs-big")
	mustCreate(t, kube, small)
	mustCreate(t, kube, big)

	c := New(kube, &recordingCloud{}, events.NewFakeRecorder(100), clocktesting.NewFakeClock(time.Now()), Options{EvictionRetry: time.Second, DrainPoll: time.Second})
	drain := func(node *corev1.Node) {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}); err != nil {
			t.Fatal(err)
		}
	}
	evicted := func(p *corev1.Pod) bool {
		t.Helper()
		got := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		return !got.DeletionTimestamp.IsZero()
	}

	drain(nodeA)
	if evicted(small) {
		t.Fatal("small pod evicted while a larger pod of the same command still waits on node-b")
	}
	drain(nodeB)
	if !evicted(big) {
		t.Fatal("big pod not evicted: it is the command's largest")
	}
	recreated := ownedPod("big-2", "", "4", "rs-big")
	mustCreate(t, kube, recreated)
	drain(nodeA)
	if evicted(small) {
		t.Fatal("small pod evicted while the big pod's re-creation is still pending")
	}
	if err := kube.Delete(ctx, recreated); err != nil { // stands for its binding: no pod of rs-big pending
		t.Fatal(err)
	}
	drain(nodeA)
	if !evicted(small) {
		t.Fatal("small pod not evicted once the larger pod's re-creation landed")
	}
}
