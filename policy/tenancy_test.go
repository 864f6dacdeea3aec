package policy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// daemonPod is a pod as the DaemonSet controller creates it: owned by the DaemonSet, pinned to one
// node by a matchFields term.
func daemonPod(namespace, node string) *corev1.Pod {
	yes := true
	p := podWith(res(nil, nil))
	p.Namespace = namespace
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &yes}}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
	}}}
	return p
}

func TestValidatePodPlacementTenancy(t *testing.T) {
	t.Parallel()
	p := podPolicy(false) // binds team: a namespaces to [shared team-a]
	other := map[string]string{"team": "b"}
	inNamespace := func(ns string, edit func(*corev1.Pod)) *corev1.Pod {
		pod := podWith(res(nil, nil))
		pod.Namespace = ns
		edit(pod)
		return pod
	}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		ns     map[string]string
		pinned string
		want   string
	}{
		{name: "another namespace selecting a reserved pool", ns: other,
			pod:  inNamespace("web", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "team-a"} }),
			want: `spec.nodeSelector[karpenter.sh/nodepool]: Forbidden: rule nodePoolBindings (Guardrail "defaults"): pod selects NodePool "team-a", but NodePools [shared team-a] are reserved for the namespaces their nodePoolBindings select, and namespace "web" is not one of them; fix: select a NodePool not reserved for other namespaces, or ask the platform team to add namespace "web" to the binding of the NodePool`},
		{name: "another namespace requiring only reserved pools", ns: other,
			pod: inNamespace("web", func(p *corev1.Pod) {
				p.Spec.Affinity = nodePoolAffinity([]corev1.NodeSelectorRequirement{inPools("shared")})
			}),
			want: `pod requires karpenter.sh/nodepool In [shared], but NodePools [shared team-a] are reserved`},
		{name: "another namespace selecting an unreserved pool", ns: other,
			pod: inNamespace("web", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "general"} })},
		{name: "another namespace without selection", ns: other, pod: inNamespace("web", func(*corev1.Pod) {})},
		{name: "spec.nodeName on a reserved pool's node", ns: other, pinned: "team-a",
			pod:  inNamespace("web", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }),
			want: `spec.nodeName: Forbidden: rule nodePoolBindings (Guardrail "defaults"): pod is bound to node "node-1" of NodePool "team-a", but NodePools [shared team-a] are reserved`},
		{name: "spec.nodeName on a bound pool's node", ns: teamLabels, pinned: "shared",
			pod: inNamespace("team-a", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" })},
		{name: "spec.nodeName no longer skips the selection check", ns: teamLabels,
			pod: inNamespace("team-a", func(p *corev1.Pod) {
				p.Spec.NodeName = "node-1"
				p.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "gpu"}
			}),
			want: `pod selects NodePool "gpu", but namespace "team-a" may only use NodePools [shared team-a]`},
		{name: "DaemonSet pod on another pool's node", ns: teamLabels, pinned: "gpu", pod: daemonPod("team-a", "gpu-node"),
			want: `spec.affinity.nodeAffinity: Forbidden: rule nodePoolBindings (Guardrail "defaults"): DaemonSet pod is placed on node "gpu-node" of NodePool "gpu", but namespace "team-a" may only use NodePools [shared team-a]; fix: add {key: karpenter.sh/nodepool, operator: In, values: [shared, team-a]} to the DaemonSet's required node affinity`},
		{name: "DaemonSet pod on a bound pool's node", ns: teamLabels, pinned: "team-a", pod: daemonPod("team-a", "a-node")},
		{name: "DaemonSet pod on a node Joist does not manage", ns: teamLabels, pod: daemonPod("team-a", "control-plane")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidatePodPlacement(p, c.pod, c.ns, c.pinned).Errors()
			if c.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected denial %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
				t.Fatalf("errs = %v\nwant one containing %q", errs, c.want)
			}
		})
	}
}

func TestPinnedNode(t *testing.T) {
	t.Parallel()
	if got := PinnedNode(daemonPod("a", "node-7")); got != "node-7" {
		t.Errorf("DaemonSet pod: %q, want node-7", got)
	}
	pod := podWith()
	pod.Spec.NodeName = "node-3"
	if got := PinnedNode(pod); got != "node-3" {
		t.Errorf("spec.nodeName: %q, want node-3", got)
	}
	if got := PinnedNode(podWith()); got != "" {
		t.Errorf("unplaced pod: %q, want none", got)
	}
}
