package disruptionpolicy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func ownedBy(owner types.UID, created time.Time) *corev1.Pod {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: metav1.NewTime(created)}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: owner, Controller: &yes}}
	}
	return p
}

func TestMovedReplica(t *testing.T) {
	executed := time.Date(2026, 12, 2, 14, 0, 0, 700_000_000, time.UTC)
	moves := Moves{}
	moves.Record([]types.UID{"rs-a"}, executed)
	moves.Record([]types.UID{"rs-a"}, executed.Add(time.Hour)) // the first move counts
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"re-created after the move", ownedBy("rs-a", executed.Add(3*time.Second)), true},
		{"created in the second of the move", ownedBy("rs-a", executed.Truncate(time.Second)), true},
		{"older than the move", ownedBy("rs-a", executed.Add(-2*time.Second)), false},
		{"other workload", ownedBy("rs-b", executed.Add(3*time.Second)), false},
		{"no controller", ownedBy("", executed.Add(3*time.Second)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := moves.MovedReplica([]*corev1.Pod{tc.pod}) != nil; got != tc.want {
				t.Errorf("moved = %t, want %t", got, tc.want)
			}
		})
	}
	if (Moves{}).MovedReplica([]*corev1.Pod{ownedBy("rs-a", executed.Add(time.Second))}) != nil {
		t.Error("an empty memory reports a moved replica")
	}
	owners := Owners([]*corev1.Pod{ownedBy("rs-a", executed), ownedBy("rs-a", executed), ownedBy("", executed), ownedBy("rs-b", executed)})
	if len(owners) != 2 || owners[0] != "rs-a" || owners[1] != "rs-b" {
		t.Errorf("owners %v, want [rs-a rs-b]", owners)
	}
}

func TestMovesForgetBefore(t *testing.T) {
	executed := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	moves := Moves{}
	moves.Record([]types.UID{"rs-old"}, executed)
	moves.Record([]types.UID{"rs-new"}, executed.Add(10*time.Minute))
	moves.ForgetBefore(executed.Add(5 * time.Minute))
	if _, ok := moves["rs-old"]; ok {
		t.Error("a move before the cut is remembered")
	}
	if _, ok := moves["rs-new"]; !ok {
		t.Error("a move after the cut is forgotten")
	}
}
