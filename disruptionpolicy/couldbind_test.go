package disruptionpolicy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRoomCouldBind(t *testing.T) {
	node := func(cpu, pods string, mutate func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse(pods)}}}
		if mutate != nil {
			mutate(n)
		}
		return n
	}
	pod := func(cpu string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	taint := func(tn corev1.Taint) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, tn) }
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		bound []*corev1.Pod
		pod   *corev1.Pod
		want  bool
	}{
		{"room left", node("4", "110", nil), []*corev1.Pod{pod("2", nil)}, pod("2", nil), true},
		{"no cpu left for it", node("4", "110", nil), []*corev1.Pod{pod("3", nil)}, pod("2", nil), false},
		{"pods limit reached", node("4", "1", nil), []*corev1.Pod{pod("1", nil)}, pod("1", nil), false},
		{"a resource the node does not have", node("4", "110", nil), nil, pod("1", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}), false},
		{"unschedulable", node("4", "110", func(n *corev1.Node) { n.Spec.Unschedulable = true }), nil, pod("1", nil), false},
		{"untolerated NoSchedule taint", node("4", "110", taint(corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})), nil, pod("1", nil), false},
		{"tolerated taint", node("4", "110", taint(corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule})), nil, pod("1", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), true},
		{"PreferNoSchedule does not filter", node("4", "110", taint(corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})), nil, pod("1", nil), true},
		{"its own planned-removal mark is not counted", node("4", "110", taint(PlannedRemovalTaint)), nil, pod("1", nil), true},
		{"node selector does not match", node("4", "110", nil), nil, pod("1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }), false},
		{"node selector matches", node("4", "110", nil), nil, pod("1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }), true},
	} {
		if got := RoomOn(tc.node, tc.bound).CouldBind(tc.pod); got != tc.want {
			t.Errorf("%s: CouldBind = %t, want %t", tc.name, got, tc.want)
		}
	}
}
