package policy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// rl builds a ResourceList from name/value pairs.
func rl(kv ...string) corev1.ResourceList {
	if len(kv) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func res(requests, limits corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}
}

func podWith(containers ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"}}
	for i, r := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: "x", Resources: r})
	}
	return p
}

func nodePoolAffinity(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
	ns := &corev1.NodeSelector{}
	for _, t := range terms {
		ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}}
}

func inPools(pools ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: pools}
}

var teamLabels = map[string]string{"team": "a"}

func podPolicy(align bool) Policy {
	return Merge([]v1alpha1.Guardrail{guardrail("defaults", v1alpha1.GuardrailSpec{
		PodDefaults: []v1alpha1.PodDefaults{{
			NamespaceSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			DefaultRequests:     rl("cpu", "100m", "memory", "128Mi"),
			DefaultLimits:       rl("memory", "256Mi"),
			AlignNonCPURequests: align,
		}},
		NodePoolBindings: []v1alpha1.NodePoolBinding{{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			NodePools:         []string{"team-a", "shared"},
		}},
	})})
}

func TestDefaultPod(t *testing.T) {
	t.Parallel()
	bound := nodePoolAffinity([]corev1.NodeSelectorRequirement{inPools("shared", "team-a")})
	cases := []struct {
		name     string
		p        Policy
		nsLabels map[string]string
		pod      *corev1.Pod
		want     func(*corev1.Pod) // edits a copy of the input into the expected result
		changes  int
	}{
		{
			name: "no requests", p: podPolicy(false), nsLabels: teamLabels, pod: podWith(res(nil, nil)),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = res(rl("cpu", "100m", "memory", "128Mi"), rl("memory", "256Mi"))
				p.Spec.Affinity = bound
			},
			changes: 4,
		},
		{
			name: "no requests, aligned", p: podPolicy(true), nsLabels: teamLabels, pod: podWith(res(nil, nil)),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = res(rl("cpu", "100m", "memory", "256Mi"), rl("memory", "256Mi"))
				p.Spec.Affinity = bound
			},
			changes: 5,
		},
		{
			name: "limits only: requests = limits", p: podPolicy(false), nsLabels: teamLabels, pod: podWith(res(nil, rl("cpu", "2", "memory", "1Gi"))),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = res(rl("cpu", "2", "memory", "1Gi"), rl("cpu", "2", "memory", "1Gi"))
				p.Spec.Affinity = bound
			},
			changes: 3,
		},
		{
			name: "requests below limits, aligned: memory raised, cpu kept", p: podPolicy(true), nsLabels: teamLabels,
			pod: podWith(res(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "2", "memory", "1Gi"))),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = res(rl("cpu", "100m", "memory", "1Gi"), rl("cpu", "2", "memory", "1Gi"))
				p.Spec.Affinity = bound
			},
			changes: 2,
		},
		{
			name: "request above the default limit: limit left unset", p: podPolicy(false), nsLabels: teamLabels,
			pod: podWith(res(rl("memory", "1Gi"), nil)),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = res(rl("cpu", "100m", "memory", "1Gi"), nil)
				p.Spec.Affinity = bound
			},
			changes: 2,
		},
		{
			name: "init containers too", p: podPolicy(false), nsLabels: teamLabels,
			pod: func() *corev1.Pod {
				p := podWith(res(rl("cpu", "1", "memory", "1Gi"), rl("memory", "1Gi")))
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "x"}}
				return p
			}(),
			want: func(p *corev1.Pod) {
				p.Spec.InitContainers[0].Resources = res(rl("cpu", "100m", "memory", "128Mi"), rl("memory", "256Mi"))
				p.Spec.Affinity = bound
			},
			changes: 4,
		},
		{
			name: "unbound namespace: kept off the pools reserved for bound namespaces", p: podPolicy(true), nsLabels: map[string]string{"team": "b"},
			pod: podWith(res(nil, nil)), want: func(p *corev1.Pod) {
				p.Spec.Affinity = nodePoolAffinity([]corev1.NodeSelectorRequirement{{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"shared", "team-a"}}})
			},
			changes: 1,
		},
		{
			name: "existing terms each get the pool expression", p: podPolicy(false), nsLabels: teamLabels,
			pod: func() *corev1.Pod {
				p := podWith(res(rl("cpu", "1", "memory", "1Gi"), rl("memory", "1Gi")))
				p.Spec.Affinity = nodePoolAffinity(
					[]corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}},
					[]corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z"}}})
				return p
			}(),
			want: func(p *corev1.Pod) {
				p.Spec.Affinity = nodePoolAffinity(
					[]corev1.NodeSelectorRequirement{{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}, inPools("shared", "team-a")},
					[]corev1.NodeSelectorRequirement{{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z"}}, inPools("shared", "team-a")})
			},
			changes: 1,
		},
		{
			name: "DaemonSet pods keep their placement", p: podPolicy(false), nsLabels: teamLabels,
			pod: func() *corev1.Pod {
				p := podWith(res(rl("cpu", "1", "memory", "1Gi"), rl("memory", "1Gi")))
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", APIVersion: "apps/v1", UID: "u", Controller: ptr(true)}}
				return p
			}(),
			want: func(*corev1.Pod) {},
		},
		{
			name: "bindings intersect; nothing in common means no Joist pool", nsLabels: teamLabels,
			p: Merge([]v1alpha1.Guardrail{
				guardrail("x", v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"a", "b"}}}}),
				guardrail("y", v1alpha1.GuardrailSpec{NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"c"}}}}),
			}),
			pod: podWith(res(nil, nil)),
			want: func(p *corev1.Pod) {
				p.Spec.Affinity = nodePoolAffinity([]corev1.NodeSelectorRequirement{{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpDoesNotExist}})
			},
			changes: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := c.pod.DeepCopy()
			want := c.pod.DeepCopy()
			c.want(want)
			changes := DefaultPod(c.p, pod, c.nsLabels)
			if len(changes) != c.changes {
				t.Errorf("changes = %d %q, want %d", len(changes), changes, c.changes)
			}
			annotation := pod.Annotations[v1alpha1.MutationsAnnotationKey]
			if annotation != strings.Join(changes, "; ") {
				t.Errorf("annotation %q does not record changes %q", annotation, changes)
			}
			delete(pod.Annotations, v1alpha1.MutationsAnnotationKey)
			if len(pod.Annotations) == 0 {
				pod.Annotations = nil
			}
			if !apiequality.Semantic.DeepEqual(pod.Spec, want.Spec) {
				t.Errorf("spec:\n got  %+v\n want %+v", pod.Spec, want.Spec)
			}
			// Defaulting twice changes nothing more (reinvocation is safe).
			if again := DefaultPod(c.p, pod, c.nsLabels); len(again) != 0 {
				t.Errorf("second pass changed %q", again)
			}
		})
	}
}

func TestDefaultPodAnnotation(t *testing.T) {
	t.Parallel()
	pod := podWith(res(nil, nil))
	DefaultPod(podPolicy(true), pod, teamLabels)
	want := `containers[a].resources.limits.memory=256Mi (defaultLimits by Guardrail "defaults"); ` +
		`containers[a].resources.requests.cpu=100m (defaultRequests by Guardrail "defaults"); ` +
		`containers[a].resources.requests.memory=128Mi (defaultRequests by Guardrail "defaults"); ` +
		`containers[a].resources.requests.memory=256Mi (alignNonCPURequests by Guardrail "defaults"); ` +
		`affinity karpenter.sh/nodepool In [shared,team-a] by Guardrail "defaults"`
	if got := pod.Annotations[v1alpha1.MutationsAnnotationKey]; got != want {
		t.Errorf("annotation:\n got  %s\n want %s", got, want)
	}
}

func TestValidatePodPlacement(t *testing.T) {
	t.Parallel()
	p := podPolicy(false)
	cases := []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{name: "no selection", edit: func(*corev1.Pod) {}},
		{name: "bound pool by nodeSelector", edit: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "team-a"} }},
		{name: "other pool by nodeSelector", edit: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "team-b"} },
			want: `spec.nodeSelector[karpenter.sh/nodepool]: Forbidden: rule nodePoolBindings (Guardrail "defaults"): pod selects NodePool "team-b", but namespace "team-a" may only use NodePools [shared team-a]; fix: select one of the NodePools bound to namespace "team-a" (shared, team-a), or drop the NodePool selection`},
		{name: "affinity naming only other pools", edit: func(p *corev1.Pod) {
			p.Spec.Affinity = nodePoolAffinity([]corev1.NodeSelectorRequirement{inPools("gpu", "team-b")})
		},
			want: `rule nodePoolBindings (Guardrail "defaults"): pod requires karpenter.sh/nodepool In [gpu,team-b], but namespace "team-a" may only use NodePools [shared team-a]`},
		{name: "affinity with one usable term", edit: func(p *corev1.Pod) {
			p.Spec.Affinity = nodePoolAffinity([]corev1.NodeSelectorRequirement{inPools("gpu")}, []corev1.NodeSelectorRequirement{inPools("shared")})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := podWith(res(nil, nil))
			c.edit(pod)
			errs := ValidatePodPlacement(p, pod, teamLabels, "").Errors()
			if c.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected denial %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
				t.Fatalf("errs = %v, want one containing %q", errs, c.want)
			}
		})
	}
}
