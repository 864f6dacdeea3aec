package policy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

func TestValidateNodePool(t *testing.T) {
	t.Parallel()
	spot := func(np *v1.NodePool) {
		anyCapacity(np)
		req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")(np)
	}
	strict := Merge([]v1alpha1.Guardrail{guardrail("platform", v1alpha1.GuardrailSpec{
		NodePools: v1alpha1.NodePoolRules{
			MaxLimits: &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"cpu": *q("500")}},
			Spot:      &v1alpha1.SpotRule{Action: v1alpha1.ActionDeny, MinInstanceTypes: ptr(int32(3))},
		},
		ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("250")},
	})})
	cases := []struct {
		name    string
		p       Policy
		np      *v1.NodePool
		others  []v1.NodePool
		catalog []*catalog.InstanceType
		// want lists substrings, one per expected violation, in order; prefix "warn:" for warnings.
		want []string
	}{
		{name: "safe pool", p: Merge(nil), np: pool("a")},
		{name: "no limits", p: Merge(nil), np: pool("a", limits()), want: []string{
			`spec.limits: Forbidden: rule nodePools.requireLimits (built-in default): NodePool "a" sets no limit (cpu, memory or nodes), so it can grow without bound while pods are pending; fix: set at least one of spec.limits.cpu, spec.limits.memory or spec.limits.nodes`,
		}},
		{name: "a cpu limit alone bounds the pool", p: Merge(nil), np: pool("a", limits("cpu", "100"))},
		{name: "a node limit alone bounds the pool", p: Merge(nil), np: pool("a", limits("nodes", "10"))},
		{name: "a Guardrail's required limits each apply", p: Merge([]v1alpha1.Guardrail{guardrail("platform", v1alpha1.GuardrailSpec{NodePools: v1alpha1.NodePoolRules{
			RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionDeny, Resources: []corev1.ResourceName{"cpu", "memory"}}}})}), np: pool("a", limits("cpu", "100")), want: []string{
			`spec.limits[memory]: Forbidden: rule nodePools.requireLimits (Guardrail "platform"): NodePool "a" sets no memory limit`,
		}},
		{name: "limit beyond any real cluster", p: Merge(nil), np: pool("a", limits("cpu", "1000000")), want: []string{
			`warn:spec.limits[cpu]: rule nodePools.maxLimits (built-in default): spec.limits.cpu is 1M, beyond any real cluster (100k); fix: lower spec.limits.cpu`,
		}},
		{name: "above per-pool ceiling", p: strict, np: pool("a", limits("cpu", "600", "memory", "1Ti")), want: []string{
			`spec.limits[cpu]: Forbidden: rule nodePools.maxLimits (Guardrail "platform"): spec.limits.cpu is 600, above the per-pool ceiling 500; fix: lower spec.limits.cpu to at most 500`,
			`spec.limits[cpu]: Forbidden: rule clusterLimits (Guardrail "platform"): the declared cpu limits of all NodePools add up to 600 (this pool 600), above the cluster-wide ceiling 250; fix: lower spec.limits.cpu to at most 250`,
		}},
		{name: "gpu-only pool without taint, from catalog", p: Merge(nil), np: pool("gpu", req("example.com/family", corev1.NodeSelectorOpIn, "p3")), catalog: testCatalog(), want: []string{
			`spec.template.spec.taints: Forbidden: rule nodePools.gpu (built-in default): NodePool "gpu" can launch accelerator instance types (e.g. p3.2xlarge with 1 nvidia.com/gpu) but has no NoSchedule or NoExecute taint`,
			`warn:spec.template.spec.expireAfter: rule nodePools.gpu.expireAfterAction (built-in default): NodePool "gpu" launches accelerator instance types (e.g. p3.2xlarge with 1 nvidia.com/gpu) and its nodes expire after 720h0m0s`,
		}},
		{name: "general pool that can reach a gpu type is warned", p: Merge(nil), np: pool("general"), catalog: testCatalog(), want: []string{
			`warn:spec.template.spec.requirements: rule nodePools.gpu (built-in default): NodePool "general" is a general pool that can also launch accelerator instance types (e.g. p3.2xlarge with 1 nvidia.com/gpu); untainted, any pod that fits only such a type lands on an expensive node; fix: exclude the accelerator families`,
		}},
		{name: "a Guardrail's gpu deny covers general pools too", p: Merge([]v1alpha1.Guardrail{guardrail("platform", v1alpha1.GuardrailSpec{NodePools: v1alpha1.NodePoolRules{
			GPU: &v1alpha1.GPURule{Action: v1alpha1.ActionDeny}}})}), np: pool("general", expire("Never")), catalog: testCatalog(), want: []string{
			`spec.template.spec.taints: Forbidden: rule nodePools.gpu (Guardrail "platform"): NodePool "general" can launch accelerator instance types`,
		}},
		{name: "pool without capacity type is spot-capable: warned, and the spot rule applies", p: strict, np: pool("s", anyCapacity, req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64"), limits("cpu", "100", "memory", "1Ti")), catalog: testCatalog(), want: []string{
			`spec.template.spec.requirements: Forbidden: rule nodePools.spot.minInstanceTypes (Guardrail "platform"): spot-capable NodePool admits 2 instance types of the provider catalog (c6g.large, c6g.xlarge), fewer than 3`,
			`warn:spec.template.spec.requirements: rule nodePools.spot.implicit (Guardrail "platform"): NodePool "s" has no karpenter.sh/capacity-type requirement, so it launches spot capacity whenever spot is cheaper`,
		}},
		{name: "gpu excluded by requirements", p: Merge(nil), np: pool("cpu", req(v1.LabelInstanceType, corev1.NodeSelectorOpNotIn, "p3.2xlarge")), catalog: testCatalog()},
		{name: "gpu tainted, never expires", p: Merge(nil), np: pool("gpu", taint("nvidia.com/gpu", corev1.TaintEffectNoSchedule), expire("Never")), catalog: testCatalog()},
		{name: "gpu by requirement key without catalog", p: Merge(nil), np: pool("gpu", req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpGt, "0"), taint("gpu", corev1.TaintEffectPreferNoSchedule), expire("Never")), want: []string{
			`rule nodePools.gpu (built-in default): NodePool "gpu" can launch accelerator instance types (requirement karpenter.k8s.aws/instance-gpu-count Gt 0)`,
		}},
		{name: "spot with too few types in catalog", p: strict, np: pool("s", spot, req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64"), limits("cpu", "100", "memory", "1Ti")), catalog: testCatalog(), want: []string{
			`spec.template.spec.requirements: Forbidden: rule nodePools.spot.minInstanceTypes (Guardrail "platform"): spot-capable NodePool admits 2 instance types of the provider catalog (c6g.large, c6g.xlarge), fewer than 3`,
		}},
		{name: "spot allow list without catalog", p: Merge(nil), np: pool("s", spot, req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large", "m5.xlarge")), want: []string{
			`warn:spec.template.spec.requirements: rule nodePools.spot.minInstanceTypes (built-in default): spot-capable NodePool admits at most 2 instance types (m5.large, m5.xlarge), fewer than 10; when spot capacity for them runs dry, pods stay Pending; fix: widen the requirements`,
		}},
		{name: "on-demand pool ignores spot rule", p: strict, np: pool("od", req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64"), limits("cpu", "100", "memory", "1Ti")), catalog: testCatalog()},
		{name: "overlap with equal weight", p: Merge(nil), np: pool("b"), others: []v1.NodePool{*pool("a")}, want: []string{
			`spec.template.spec.requirements: Forbidden: rule nodePools.overlap (built-in default): NodePool "b" overlaps NodePool "a": both have weight 0 and the same taints`,
		}},
		{name: "no overlap with different weight", p: Merge(nil), np: pool("b", weight(10)), others: []v1.NodePool{*pool("a")}},
		{name: "no overlap with disjoint arch", p: Merge(nil), np: pool("b", req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64")), others: []v1.NodePool{*pool("a", req(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64"))}},
		{name: "no overlap with different taints", p: Merge(nil), np: pool("b", taint("team", corev1.TaintEffectNoSchedule)), others: []v1.NodePool{*pool("a")}},
		{name: "template label separates", p: Merge(nil), np: pool("b", label("team", "b")), others: []v1.NodePool{*pool("a", req("team", corev1.NodeSelectorOpNotIn, "b"))}},
		{name: "update of itself is no overlap", p: Merge(nil), np: pool("a"), others: []v1.NodePool{*pool("a")}},
		{name: "cluster limits across pools", p: strict, np: pool("c", limits("cpu", "100", "memory", "1Ti")), others: []v1.NodePool{*pool("a", weight(1), limits("cpu", "100")), *pool("b", weight(2), limits("cpu", "80"))}, want: []string{
			`spec.limits[cpu]: Forbidden: rule clusterLimits (Guardrail "platform"): the declared cpu limits of all NodePools add up to 280 (this pool 100, "a" 100, "b" 80), above the cluster-wide ceiling 250; fix: lower spec.limits.cpu to at most 70, lower the other pools' limits, or raise clusterLimits.cpu in Guardrail "platform"`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := ValidateNodePool(c.p, c.np, NodePoolContext{Others: c.others, Catalog: c.catalog})
			errs, warns := vs.Split()
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			for _, w := range warns {
				got = append(got, "warn:"+w)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d violations, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("violation %d:\n got  %s\n want …%s…", i, got[i], c.want[i])
				}
			}
		})
	}
}
