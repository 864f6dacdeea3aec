package policy

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

func fuzzPolicy() Policy {
	return Merge([]v1alpha1.Guardrail{guardrail("fuzz", v1alpha1.GuardrailSpec{
		NodePools: v1alpha1.NodePoolRules{
			MaxLimits: &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"cpu": *q("500")}},
			Spot:      &v1alpha1.SpotRule{MinInstanceTypes: ptr(int32(3))},
		},
		ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("250"), Nodes: ptr(int64(10))},
		PodDefaults: []v1alpha1.PodDefaults{{
			DefaultRequests: rl("cpu", "100m", "memory", "128Mi"), DefaultLimits: rl("memory", "256Mi", "ephemeral-storage", "1Gi"),
			AlignNonCPURequests: true,
		}},
		NodePoolBindings: []v1alpha1.NodePoolBinding{{NodePools: []string{"a", "b"}}},
	})})
}

// FuzzValidateNodePool feeds random requirements, limits, taints and raw NodePool JSON to the
// validator: it must not panic, must be deterministic, and every violation must name a rule, a
// field, the problem and a fix.
func FuzzValidateNodePool(f *testing.F) {
	f.Add("kubernetes.io/arch", "In", "amd64", "arm64", int32(10), "100", "NoSchedule", []byte(`{"metadata":{"name":"x"}}`))
	f.Add("karpenter.sh/capacity-type", "NotIn", "on-demand", "", int32(0), "-5", "", []byte(`{"spec":{"limits":{"cpu":"1k"}}}`))
	f.Add("karpenter.k8s.aws/instance-gpu-count", "Gt", "0", "x", int32(-3), "abc", "NoExecute", []byte(`not json`))
	f.Add("node.kubernetes.io/instance-type", "Lte", "99999999999999999999", "", int32(100), "1e3", "PreferNoSchedule", []byte(`{"spec":{"template":{"spec":{"requirements":[{"key":"a","operator":"Gte","values":["-9223372036854775808"]}]}}}}`))
	f.Add("", "DoesNotExist", "", "", int32(1), "0", "bogus", []byte(`{"spec":{"weight":5,"template":{"metadata":{"labels":{"team":"a"}}}}}`))
	p := fuzzPolicy()
	cat := testCatalog()
	f.Fuzz(func(t *testing.T, key, op, val1, val2 string, w int32, cpu, effect string, raw []byte) {
		np := pool("fuzz", req(key, corev1.NodeSelectorOperator(op), val1, val2), weight(w), taint(key, corev1.TaintEffect(effect)))
		if qty, err := resource.ParseQuantity(cpu); err == nil {
			np.Spec.Limits[corev1.ResourceCPU] = qty
		}
		other := &v1.NodePool{}
		if err := json.Unmarshal(raw, other); err != nil {
			other = pool("other", req(key, corev1.NodeSelectorOpNotIn, val2), weight(w))
		}
		other.Name = "other"
		in := NodePoolContext{Others: []v1.NodePool{*other, *np}, Catalog: cat}
		for _, target := range []*v1.NodePool{np, other} {
			vs := ValidateNodePool(p, target, in)
			again := ValidateNodePool(p, target, in)
			if len(vs) != len(again) {
				t.Fatalf("not deterministic: %d then %d violations", len(vs), len(again))
			}
			for i, v := range vs {
				if v.Rule == "" || v.Field == nil || v.Problem == "" || v.Fix == "" || v.Setting.Source == "" {
					t.Fatalf("incomplete violation %+v", v)
				}
				if v.Detail() != again[i].Detail() {
					t.Fatalf("not deterministic:\n%s\n%s", v.Detail(), again[i].Detail())
				}
			}
			_ = ValidateNodePool(p, target, NodePoolContext{Others: in.Others})
		}
	})
}

// FuzzDefaultPod feeds random container resources and raw pod JSON to the defaulter: it must not
// panic, must never produce a request above its limit from a valid container, and must be
// idempotent (the webhook is reinvoked).
func FuzzDefaultPod(f *testing.F) {
	f.Add("100m", "1", "64Mi", "", "team-a", []byte(`{"spec":{"containers":[{"name":"c"}]}}`))
	f.Add("", "", "", "2Gi", "team-b", []byte(`{"spec":{"initContainers":[{"name":"i","resources":{"limits":{"memory":"1Gi"}}}]}}`))
	f.Add("3", "2", "1Gi", "512Mi", "", []byte(`{"metadata":{"ownerReferences":[{"kind":"DaemonSet","controller":true}]},"spec":{"nodeName":"n"}}`))
	f.Add("bogus", "-1", "1e3", "0", "x", []byte(`{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{},{"matchExpressions":[{"key":"karpenter.sh/nodepool","operator":"In","values":["a"]}]}]}}}}}`))
	f.Add("1", "", "", "", "y", []byte(`[]`))
	p := fuzzPolicy()
	f.Fuzz(func(t *testing.T, cpuReq, cpuLim, memReq, memLim, ns string, raw []byte) {
		pod := &corev1.Pod{}
		if err := json.Unmarshal(raw, pod); err != nil {
			pod = &corev1.Pod{}
		}
		put := func(list *corev1.ResourceList, n corev1.ResourceName, s string) {
			if qty, err := resource.ParseQuantity(s); err == nil {
				if *list == nil {
					*list = corev1.ResourceList{}
				}
				(*list)[n] = qty
			}
		}
		c := corev1.Container{Name: "fuzz"}
		put(&c.Resources.Requests, corev1.ResourceCPU, cpuReq)
		put(&c.Resources.Limits, corev1.ResourceCPU, cpuLim)
		put(&c.Resources.Requests, corev1.ResourceMemory, memReq)
		put(&c.Resources.Limits, corev1.ResourceMemory, memLim)
		pod.Spec.Containers = append(pod.Spec.Containers, c)
		valid := requestsWithinLimits(pod)
		DefaultPod(p, pod, map[string]string{"ns": ns})
		if valid && !requestsWithinLimits(pod) {
			t.Fatalf("defaulting put a request above its limit: %+v", pod.Spec.Containers)
		}
		if again := DefaultPod(p, pod, map[string]string{"ns": ns}); len(again) != 0 {
			t.Fatalf("not idempotent: %q", again)
		}
		_ = ValidatePodPlacement(p, pod, map[string]string{"ns": ns}, "")
		_ = ValidateDoNotDisrupt(p, "Pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1.DoNotDisruptAnnotationKey: cpuReq}}}, nil, nil)
	})
}

func requestsWithinLimits(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for n, lim := range c.Resources.Limits {
				if r, ok := c.Resources.Requests[n]; ok && r.Cmp(lim) > 0 {
					return false
				}
			}
		}
	}
	return true
}
