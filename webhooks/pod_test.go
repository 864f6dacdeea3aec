package webhooks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

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

func resources(requests, limits corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: requests, Limits: limits}
}

func namespace(t *testing.T, s *suite, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	s.create(t, ns)
}

func newPod(ns, name string, r corev1.ResourceRequirements) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox", Resources: r}}},
	}
}

func poolAffinity(pools ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: pools,
		}}}},
	}}}
}

func testPods(t *testing.T, s *suite) {
	ctx := context.Background()
	namespace(t, s, "team-a", map[string]string{"team": "a"})
	namespace(t, s, "team-b", nil)
	namespace(t, s, "sandbox", map[string]string{"team": "a", "tier": "sandbox"})
	g := &v1alpha1.Guardrail{ObjectMeta: objectMeta("teams"), Spec: v1alpha1.GuardrailSpec{
		PodDefaults: []v1alpha1.PodDefaults{
			{DefaultRequests: rl("cpu", "100m", "memory", "128Mi"), DefaultLimits: rl("memory", "256Mi")},
			{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, AlignNonCPURequests: true},
		},
		NodePoolBindings: []v1alpha1.NodePoolBinding{{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			NodePools:         []string{"team-a", "shared"},
		}},
		PodOptOut: &v1alpha1.PodOptOut{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "sandbox"}}},
	}}
	s.create(t, g)
	defer s.remove(t, g)

	bound := poolAffinity("shared", "team-a")
	cases := []struct {
		name       string
		pod        *corev1.Pod
		init       []corev1.Container
		want       corev1.ResourceRequirements
		wantInit   *corev1.ResourceRequirements
		affinity   *corev1.Affinity
		annotation []string // substrings; nil means no annotation
	}{
		{name: "no requests, bound namespace", pod: newPod("team-a", "none", resources(nil, nil)),
			want: resources(rl("cpu", "100m", "memory", "256Mi"), rl("memory", "256Mi")), affinity: bound,
			annotation: []string{
				`containers[app].resources.limits.memory=256Mi (defaultLimits by Guardrail "teams")`,
				`containers[app].resources.requests.cpu=100m (defaultRequests by Guardrail "teams")`,
				`containers[app].resources.requests.memory=256Mi (alignNonCPURequests by Guardrail "teams")`,
				`affinity karpenter.sh/nodepool In [shared,team-a] by Guardrail "teams"`,
			}},
		{name: "limits only", pod: newPod("team-a", "limits-only", resources(nil, rl("cpu", "2", "memory", "1Gi"))),
			want: resources(rl("cpu", "2", "memory", "1Gi"), rl("cpu", "2", "memory", "1Gi")), affinity: bound,
			annotation: []string{`affinity karpenter.sh/nodepool In [shared,team-a]`}},
		{name: "requests below limits", pod: newPod("team-a", "below", resources(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "2", "memory", "1Gi"))),
			want: resources(rl("cpu", "100m", "memory", "1Gi"), rl("cpu", "2", "memory", "1Gi")), affinity: bound,
			annotation: []string{`containers[app].resources.requests.memory=1Gi (alignNonCPURequests by Guardrail "teams")`}},
		{name: "init containers", pod: newPod("team-a", "init", resources(rl("cpu", "1", "memory", "1Gi"), rl("memory", "1Gi"))),
			init: []corev1.Container{{Name: "setup", Image: "busybox"}},
			want: resources(rl("cpu", "1", "memory", "1Gi"), rl("memory", "1Gi")), affinity: bound,
			wantInit:   ptr(resources(rl("cpu", "100m", "memory", "256Mi"), rl("memory", "256Mi"))),
			annotation: []string{`initContainers[setup].resources.requests.cpu=100m`}},
		{name: "unbound namespace gets defaults, and is kept off the pools reserved for others", pod: newPod("team-b", "unbound", resources(nil, nil)),
			want: resources(rl("cpu", "100m", "memory", "128Mi"), rl("memory", "256Mi")),
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"shared", "team-a"}}}}}}}},
			annotation: []string{`containers[app].resources.requests.memory=128Mi (defaultRequests by Guardrail "teams")`,
				`affinity karpenter.sh/nodepool NotIn [shared,team-a] by Guardrail "teams"`}},
		{name: "kube-system is excluded", pod: newPod("kube-system", "system", resources(nil, nil)), want: resources(nil, nil)},
		{name: "opt-out label ignored where no Guardrail allows it", pod: func() *corev1.Pod {
			p := newPod("team-a", "opt-out-ignored", resources(nil, nil))
			p.Labels = map[string]string{v1alpha1.OptOutLabelKey: v1alpha1.OptOutLabelValue}
			return p
		}(), want: resources(rl("cpu", "100m", "memory", "256Mi"), rl("memory", "256Mi")), affinity: bound,
			annotation: []string{`affinity karpenter.sh/nodepool In [shared,team-a] by Guardrail "teams"`}},
		{name: "opt-out label honoured where a Guardrail allows it", pod: func() *corev1.Pod {
			p := newPod("sandbox", "opted-out", resources(nil, nil))
			p.Labels = map[string]string{v1alpha1.OptOutLabelKey: v1alpha1.OptOutLabelValue}
			return p
		}(), want: resources(nil, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := c.pod.DeepCopy()
			pod.Spec.InitContainers = c.init
			if err := s.client.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			got := &corev1.Pod{}
			if err := s.client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			if r := got.Spec.Containers[0].Resources; !apiequality.Semantic.DeepEqual(r, c.want) {
				t.Errorf("container resources:\n got  %v\n want %v", r, c.want)
			}
			if c.wantInit != nil && !apiequality.Semantic.DeepEqual(got.Spec.InitContainers[0].Resources, *c.wantInit) {
				t.Errorf("init container resources:\n got  %v\n want %v", got.Spec.InitContainers[0].Resources, *c.wantInit)
			}
			if !apiequality.Semantic.DeepEqual(got.Spec.Affinity, c.affinity) {
				t.Errorf("affinity:\n got  %v\n want %v", got.Spec.Affinity, c.affinity)
			}
			annotation, ok := got.Annotations[v1alpha1.MutationsAnnotationKey]
			if c.annotation == nil && ok {
				t.Errorf("unexpected mutations annotation %q", annotation)
			}
			for _, a := range c.annotation {
				if !strings.Contains(annotation, a) {
					t.Errorf("annotation %q lacks %q", annotation, a)
				}
			}
		})
	}

	t.Run("explicit selection of an unbound pool is denied", func(t *testing.T) {
		pod := newPod("team-a", "wrong-pool", resources(nil, nil))
		pod.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "gpu"}
		err := s.client.Create(ctx, pod)
		want := `admission webhook "vpod.policy.joist.dev" denied the request: Pod "wrong-pool" is invalid: spec.nodeSelector[karpenter.sh/nodepool]: Forbidden: rule nodePoolBindings (Guardrail "teams"): pod selects NodePool "gpu", but namespace "team-a" may only use NodePools [shared team-a]; fix: select one of the NodePools bound to namespace "team-a" (shared, team-a), or drop the NodePool selection`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
	// The apiserver stores "1e9999999" as written; every exact comparison with it costs over a second.
	t.Run("a request beyond any node is denied, quickly", func(t *testing.T) {
		pod := newPod("team-b", "astronomic", resources(rl("cpu", "1", "memory", "1e9999999"), nil))
		start := time.Now()
		err := s.client.Create(ctx, pod)
		want := `admission webhook "vpod.policy.joist.dev" denied the request: Pod "astronomic" is invalid: spec.containers[0].resources.requests[memory]: Forbidden: rule quantities (built-in default): 1e9999999 is beyond 1e30, more than any node has; fix: set spec.containers[0].resources.requests.memory to a real amount, e.g. 500m, 8Gi or "1000"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		t.Logf("denied after %s (the apiserver's own validation of the quantity takes about 2 s)", time.Since(start))
	})
	t.Run("explicit selection of a bound pool is allowed", func(t *testing.T) {
		pod := newPod("team-a", "right-pool", resources(nil, nil))
		pod.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "shared"}
		if err := s.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a pool bound to namespaces is reserved for them", func(t *testing.T) {
		pod := newPod("team-b", "intruder", resources(nil, nil))
		pod.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: "team-a"}
		err := s.client.Create(ctx, pod)
		want := `Pod "intruder" is invalid: spec.nodeSelector[karpenter.sh/nodepool]: Forbidden: rule nodePoolBindings (Guardrail "teams"): pod selects NodePool "team-a", but NodePools [shared team-a] are reserved for the namespaces their nodePoolBindings select, and namespace "team-b" is not one of them`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
	t.Run("spec.nodeName on a reserved pool's node is denied", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "team-a-node", Labels: map[string]string{v1.NodePoolLabelKey: "team-a"}}}
		s.create(t, node)
		defer s.remove(t, node)
		pod := newPod("team-b", "pinned", resources(nil, nil))
		pod.Spec.NodeName = node.Name
		err := s.client.Create(ctx, pod)
		want := `Pod "pinned" is invalid: spec.nodeName: Forbidden: rule nodePoolBindings (Guardrail "teams"): pod is bound to node "team-a-node" of NodePool "team-a", but NodePools [shared team-a] are reserved`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		allowed := newPod("team-a", "pinned", resources(nil, nil))
		allowed.Spec.NodeName = node.Name
		if err := s.client.Create(ctx, allowed); err != nil {
			t.Fatalf("a bound namespace's pod on its own pool's node: %v", err)
		}
	})
}
