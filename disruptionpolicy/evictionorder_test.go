package disruptionpolicy

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/joist-dev/joist/api/v1"
)

func sized(name, cpu, memory string, owner types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}}}}}}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestEvictNowLargestFirst(t *testing.T) {
	big, big2 := sized("big", "4", "8Gi", "a"), sized("big2", "4", "8Gi", "a")
	mid, small := sized("mid", "2", "4Gi", "b"), sized("small", "500m", "1Gi", "c")
	moreMemory := sized("more-memory", "4", "16Gi", "d")
	for _, tc := range []struct {
		name                string
		candidates, waiting []*corev1.Pod
		landing             []PodSize
		want                []string
	}{
		{name: "the node's largest pods go first", candidates: []*corev1.Pod{small, big, big2, mid}, want: []string{"big", "big2"}},
		{name: "a larger pod waits on another node of the command", candidates: []*corev1.Pod{small, mid}, waiting: []*corev1.Pod{big}},
		{name: "memory breaks a CPU tie", candidates: []*corev1.Pod{big}, waiting: []*corev1.Pod{moreMemory}},
		{name: "a larger pod has not landed yet", candidates: []*corev1.Pod{mid}, landing: []PodSize{SizeOf(big)}},
		{name: "a pod of the same size landing holds nothing", candidates: []*corev1.Pod{big2}, landing: []PodSize{SizeOf(big)}, want: []string{"big2"}},
		{name: "smaller pods landing hold nothing", candidates: []*corev1.Pod{mid}, landing: []PodSize{SizeOf(small)}, want: []string{"mid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(EvictNow(tc.candidates, tc.waiting, tc.landing)); !slices.Equal(got, tc.want) {
				t.Errorf("EvictNow = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLanding(t *testing.T) {
	gone := metav1.NewTime(time.Now())
	evictedBig, evictedSmall := sized("big", "4", "8Gi", "a"), sized("small", "500m", "1Gi", "c")
	evictedBig.DeletionTimestamp, evictedSmall.DeletionTimestamp = &gone, &gone
	pendingBig := sized("big-2", "4", "8Gi", "a")
	boundSmall := sized("small-2", "500m", "1Gi", "c")
	boundSmall.Spec.NodeName = "node-x"
	got := Landing([]*corev1.Pod{evictedBig, evictedSmall}, []*corev1.Pod{pendingBig, boundSmall})
	if len(got) != 1 || got[0] != SizeOf(evictedBig) {
		t.Errorf("Landing = %v, want only the big pod's size (its re-creation is pending; the small one's is bound)", got)
	}
}

func TestCommandTargets(t *testing.T) {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{
		v1.DisruptionCommandAnnotationKey: `{"id":"a-1","targets":["a","b"],"reserved":[{"pod":"p","owner":"o","claim":"c"}]}`}}}
	if got := CommandTargets(nc); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("CommandTargets = %v, want [a b]", got)
	}
	if got := CommandTargets(&v1.NodeClaim{}); got != nil {
		t.Errorf("CommandTargets of a claim without a record = %v", got)
	}
}
