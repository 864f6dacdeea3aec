package snapshot

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// nominatedBy gives pod a nomination to node whose field the given manager set, as the apiserver
// records it.
func nominatedBy(pod *corev1.Pod, node, manager string) *corev1.Pod {
	pod.Status.NominatedNodeName = node
	pod.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{}}}`)}},
		{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{},"f:nominatedNodeName":{}}}`)}},
	}
	return pod
}

// TestStaleJoistNominationAfterRestart: a restarted Joist remembers no nominations. A pod whose
// nomination Joist wrote (its field manager owns the field) to the node of a claim that no longer
// holds nominations is re-planned; the same nomination written by the kube-scheduler is a preemption
// and launches nothing; one of unknown origin counts as the scheduler's.
func TestStaleJoistNominationAfterRestart(t *testing.T) {
	stale := nominatedBy(pendingPod("stale"), "n1", NominationFieldManager)
	scheduler := nominatedBy(pendingPod("scheduler"), "n1", "kube-scheduler")
	unknown := pendingPod("unknown")
	unknown.Status.NominatedNodeName = "n1"
	inFlight := nominatedBy(pendingPod("in-flight"), "n2", NominationFieldManager)
	c := Cluster{
		NodePools:  []*v1.NodePool{nodePool("a")},
		Nodes:      []*corev1.Node{node("n1", "a"), node("n2", "a")},
		NodeClaims: []*v1.NodeClaim{claim("a-1", "a", "n1"), claim("a-2", "a", "n2")},
		Pods:       []*corev1.Pod{stale, scheduler, unknown, inFlight},
	}
	o := opts()
	// a-1 initialized long ago: its nominations no longer count. a-2 is still live.
	o.LiveClaim = func(nc *v1.NodeClaim) bool { return nc.Name != "a-1" }
	s, err := Build(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s.Pending); len(got) != 2 || got[0] != "stale" || got[1] != "in-flight" {
		t.Errorf("pending = %v, want [stale in-flight]", got)
	}
	if got := names(s.Preempting); len(got) != 2 || got[0] != "scheduler" || got[1] != "unknown" {
		t.Errorf("preempting = %v, want [scheduler unknown]", got)
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestNominatedByJoist(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"joist wrote it", nominatedBy(pendingPod("p"), "n1", NominationFieldManager), true},
		{"scheduler wrote it", nominatedBy(pendingPod("p"), "n1", "kube-scheduler"), false},
		{"no managed fields", func() *corev1.Pod { p := pendingPod("p"); p.Status.NominatedNodeName = "n1"; return p }(), false},
		{"field cleared", func() *corev1.Pod { p := nominatedBy(pendingPod("p"), "", NominationFieldManager); return p }(), false},
	} {
		if got := NominatedByJoist(tc.pod); got != tc.want {
			t.Errorf("%s: NominatedByJoist = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestKeepNominationOwner: the cache transform keeps only who owns nominatedNodeName, so the
// answer survives it, and strips everything else.
func TestKeepNominationOwner(t *testing.T) {
	for _, manager := range []string{NominationFieldManager, "kube-scheduler"} {
		pod := nominatedBy(pendingPod("p"), "n1", manager)
		out, err := KeepNominationOwner(pod)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.Pod)
		if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != manager {
			t.Fatalf("managed fields after transform = %+v, want one entry of %s", got.ManagedFields, manager)
		}
		if NominatedByJoist(got) != (manager == NominationFieldManager) {
			t.Errorf("%s: NominatedByJoist changed by the transform", manager)
		}
	}
	plain := pendingPod("p")
	plain.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	if out, _ := KeepNominationOwner(plain); len(out.(*corev1.Pod).ManagedFields) != 0 {
		t.Error("a pod without a nomination keeps no managed fields")
	}
	n := node("n1", "a")
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	if out, _ := KeepNominationOwner(n); len(out.(*corev1.Node).ManagedFields) != 0 {
		t.Error("other objects keep no managed fields")
	}
}
