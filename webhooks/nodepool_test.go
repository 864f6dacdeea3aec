package webhooks_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

type poolOpt func(*v1.NodePool)

// nodePool is a safe NodePool: cpu and memory limits, on-demand, linux, weight unset.
func nodePool(name string, opts ...poolOpt) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: objectMeta(name), Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
			},
		}},
		Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("400Gi")},
	}}
	for _, o := range opts {
		o(np)
	}
	return np
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
}

func limits(kv ...string) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{}
		for i := 0; i+1 < len(kv); i += 2 {
			np.Spec.Limits[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func weight(w int32) poolOpt { return func(np *v1.NodePool) { np.Spec.Weight = &w } }

func taint(key string) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
}

func expire(d string) poolOpt {
	return func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(d) }
}

func templateLabel(k, val string) poolOpt {
	return func(np *v1.NodePool) { np.Spec.Template.Labels = map[string]string{k: val} }
}

// anyCapacity drops the fixture's on-demand requirement: the pool launches spot when it is cheaper.
func anyCapacity(np *v1.NodePool) {
	np.Spec.Template.Spec.Requirements = slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r v1.NodeSelectorRequirementWithMinValues) bool {
		return r.Key == v1.CapacityTypeLabelKey
	})
}

var (
	spot = func(np *v1.NodePool) {
		anyCapacity(np)
		req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand")(np)
	}
	noGPU   = req(v1.LabelInstanceType, corev1.NodeSelectorOpNotIn, "p3.2xlarge")
	gpuOnly = req(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "p3.2xlarge")
	arm64   = req(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64")
	amd64   = req(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")
)

// nodePoolCase is one NodePool create. want: "" allowed; otherwise every deny substring must be in
// the error. warns: substrings of the exact set of warning headers the client receives.
type nodePoolCase struct {
	name       string
	guardrails []v1alpha1.GuardrailSpec
	existing   []*v1.NodePool
	pool       *v1.NodePool
	deny       []string
	warns      []string
}

func testNodePools(t *testing.T, s *suite) {
	platform := func(np v1alpha1.NodePoolRules) []v1alpha1.GuardrailSpec {
		return []v1alpha1.GuardrailSpec{{NodePools: np}}
	}
	ceiling := func(c v1alpha1.ClusterLimits) []v1alpha1.GuardrailSpec {
		return []v1alpha1.GuardrailSpec{{ClusterLimits: &c}}
	}
	cases := []nodePoolCase{
		// Built-in defaults, no Guardrail.
		{name: "safe on-demand pool", pool: nodePool("safe", noGPU)},
		{name: "no limits", pool: nodePool("nolimits", noGPU, limits()), deny: []string{
			`admission webhook "vnodepool.policy.joist.dev" denied the request: NodePool.karpenter.sh "nolimits" is invalid: spec.limits: Forbidden: rule nodePools.requireLimits (built-in default): NodePool "nolimits" sets no limit (cpu, memory or nodes), so it can grow without bound while pods are pending; fix: set at least one of spec.limits.cpu, spec.limits.memory or spec.limits.nodes to the most this pool may ever hold, e.g. cpu: "1000"`,
		}},
		{name: "a cpu limit alone bounds the pool", pool: nodePool("cpuonly", noGPU, limits("cpu", "10"))},
		{name: "a limit beyond any real cluster warns", pool: nodePool("huge", noGPU, limits("cpu", "200000")), warns: []string{
			`spec.limits[cpu]: rule nodePools.maxLimits (built-in default): spec.limits.cpu is 200k, beyond any real cluster (100k)`,
		}},
		{name: "a limit beyond any quantity bound is denied", pool: nodePool("astronomic", noGPU, limits("cpu", "10", "memory", "1e9999999")), deny: []string{
			`spec.limits[memory]: Forbidden: rule quantities (built-in default): 1e9999999 is beyond 1e30, more than any node has; fix: set spec.limits.memory to a real amount, e.g. 500m, 8Gi or "1000"`,
		}},
		{name: "pool without capacity type warns that it launches spot", pool: nodePool("implicit", noGPU, anyCapacity), warns: []string{
			`spec.template.spec.requirements: rule nodePools.spot.implicit (built-in default): NodePool "implicit" has no karpenter.sh/capacity-type requirement, so it launches spot capacity whenever spot is cheaper`,
			`spec.template.spec.requirements: rule nodePools.spot.minInstanceTypes (built-in default): spot-capable NodePool admits 4 instance types`,
		}},
		{name: "spot pool with few types warns", pool: nodePool("spotty", noGPU, spot), warns: []string{
			`spec.template.spec.requirements: rule nodePools.spot.minInstanceTypes (built-in default): spot-capable NodePool admits 4 instance types of the provider catalog (c6g.large, c6g.xlarge, m5.large, m5.xlarge), fewer than 10; when spot capacity for them runs dry, pods stay Pending; fix: widen the requirements: prefer exclusion lists (NotIn) to allow lists`,
		}},
		{name: "gpu pool without taint", pool: nodePool("gpu", gpuOnly), deny: []string{
			`spec.template.spec.taints: Forbidden: rule nodePools.gpu (built-in default): NodePool "gpu" can launch accelerator instance types (e.g. p3.2xlarge with 1 nvidia.com/gpu) but has no NoSchedule or NoExecute taint, so any pod may land on these expensive nodes; fix: add a taint such as {key: nvidia.com/gpu, value: "true", effect: NoSchedule}`,
		}, warns: []string{`spec.template.spec.expireAfter: rule nodePools.gpu.expireAfterAction (built-in default): NodePool "gpu" launches accelerator instance types (e.g. p3.2xlarge with 1 nvidia.com/gpu) and its nodes expire after 720h0m0s, which kills long-running jobs at expiry; fix: set spec.template.spec.expireAfter: Never`}},
		{name: "general pool that can reach a gpu type warns", pool: nodePool("mixed", amd64), warns: []string{`spec.template.spec.requirements: rule nodePools.gpu (built-in default): NodePool "mixed" is a general pool that can also launch accelerator instance types (e.g. p3.2xlarge with 1 nvidia.com/gpu); untainted, any pod that fits only such a type lands on an expensive node; fix: exclude the accelerator families or types from the requirements`}},
		{name: "gpu pool tainted, expiring", pool: nodePool("gpu", gpuOnly, taint("nvidia.com/gpu")), warns: []string{`rule nodePools.gpu.expireAfterAction (built-in default)`}},
		{name: "gpu pool tainted, never expires", pool: nodePool("gpu", gpuOnly, taint("nvidia.com/gpu"), expire("Never"))},
		{name: "overlap, equal weight", existing: []*v1.NodePool{nodePool("general", noGPU)}, pool: nodePool("general-2", noGPU), deny: []string{
			`spec.template.spec.requirements: Forbidden: rule nodePools.overlap (built-in default): NodePool "general-2" overlaps NodePool "general": both have weight 0 and the same taints, and no requirement key separates them, so a pod that fits both is placed on either arbitrarily; fix: give one of the pools a different spec.weight (e.g. 10)`,
		}},
		{name: "overlap, equal explicit weights", existing: []*v1.NodePool{nodePool("a", noGPU, weight(50))}, pool: nodePool("b", noGPU, weight(50), spot), deny: []string{`NodePool "b" overlaps NodePool "a": both have weight 50`}, warns: []string{`nodePools.spot.minInstanceTypes`}},
		{name: "overlap, partial zone intersection", existing: []*v1.NodePool{nodePool("a", noGPU, req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"))}, pool: nodePool("b", noGPU, req(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")), deny: []string{`NodePool "b" overlaps NodePool "a"`}},
		{name: "no overlap, different weights", existing: []*v1.NodePool{nodePool("a", noGPU)}, pool: nodePool("b", noGPU, weight(10))},
		{name: "no overlap, disjoint arch", existing: []*v1.NodePool{nodePool("a", noGPU, amd64)}, pool: nodePool("b", arm64)},
		{name: "no overlap, different taints", existing: []*v1.NodePool{nodePool("a", noGPU)}, pool: nodePool("b", noGPU, taint("team-b"))},
		{name: "no overlap, template label vs NotIn", existing: []*v1.NodePool{nodePool("a", noGPU, req("team", corev1.NodeSelectorOpNotIn, "b"))}, pool: nodePool("b", noGPU, templateLabel("team", "b"))},
		// Guardrail-driven rules.
		{name: "above per-pool ceiling", guardrails: platform(v1alpha1.NodePoolRules{MaxLimits: &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"cpu": resource.MustParse("50")}}}),
			pool: nodePool("big", noGPU), deny: []string{`spec.limits[cpu]: Forbidden: rule nodePools.maxLimits (Guardrail "guardrail-0"): spec.limits.cpu is 100, above the per-pool ceiling 50; fix: lower spec.limits.cpu to at most 50, or split the capacity across several pools`}},
		{name: "ceiling on a resource the pool does not limit", guardrails: platform(v1alpha1.NodePoolRules{MaxLimits: &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}),
			pool: nodePool("nogpulimit", noGPU), deny: []string{`spec.limits[nvidia.com/gpu]: Forbidden: rule nodePools.maxLimits (Guardrail "guardrail-0"): NodePool "nogpulimit" sets no nvidia.com/gpu limit, but each pool may hold at most 8; fix: set spec.limits.nvidia.com/gpu to at most 8`}},
		{name: "requireLimits off", guardrails: platform(v1alpha1.NodePoolRules{RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionOff}}), pool: nodePool("free", noGPU, limits())},
		{name: "requireLimits warn", guardrails: platform(v1alpha1.NodePoolRules{RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionWarn, Resources: []corev1.ResourceName{"cpu"}}}),
			pool: nodePool("free", noGPU, limits("memory", "1Ti")), warns: []string{`spec.limits[cpu]: rule nodePools.requireLimits (Guardrail "guardrail-0"): NodePool "free" sets no cpu limit`}},
		{name: "spot below a strict minimum", guardrails: platform(v1alpha1.NodePoolRules{Spot: &v1alpha1.SpotRule{Action: v1alpha1.ActionDeny, MinInstanceTypes: ptr(int32(3))}}),
			pool: nodePool("arm-spot", arm64, spot), deny: []string{`spec.template.spec.requirements: Forbidden: rule nodePools.spot.minInstanceTypes (Guardrail "guardrail-0"): spot-capable NodePool admits 2 instance types of the provider catalog (c6g.large, c6g.xlarge), fewer than 3`}},
		{name: "spot meets a strict minimum", guardrails: platform(v1alpha1.NodePoolRules{Spot: &v1alpha1.SpotRule{Action: v1alpha1.ActionDeny, MinInstanceTypes: ptr(int32(3))}}),
			pool: nodePool("wide-spot", noGPU, spot)},
		{name: "overlap off", guardrails: platform(v1alpha1.NodePoolRules{Overlap: &v1alpha1.OverlapRule{Action: v1alpha1.ActionOff}}),
			existing: []*v1.NodePool{nodePool("a", noGPU)}, pool: nodePool("b", noGPU)},
		{name: "overlap warn", guardrails: platform(v1alpha1.NodePoolRules{Overlap: &v1alpha1.OverlapRule{Action: v1alpha1.ActionWarn}}),
			existing: []*v1.NodePool{nodePool("a", noGPU)}, pool: nodePool("b", noGPU), warns: []string{`spec.template.spec.requirements: rule nodePools.overlap (Guardrail "guardrail-0"): NodePool "b" overlaps NodePool "a"`}},
		{name: "strictest wins: warn beats off", guardrails: []v1alpha1.GuardrailSpec{
			{NodePools: v1alpha1.NodePoolRules{Overlap: &v1alpha1.OverlapRule{Action: v1alpha1.ActionOff}}},
			{NodePools: v1alpha1.NodePoolRules{Overlap: &v1alpha1.OverlapRule{Action: v1alpha1.ActionWarn}}},
		}, existing: []*v1.NodePool{nodePool("a", noGPU)}, pool: nodePool("b", noGPU), warns: []string{`rule nodePools.overlap (Guardrail "guardrail-1")`}},
		{name: "cluster limits across three pools", guardrails: ceiling(v1alpha1.ClusterLimits{CPU: quantity("250")}),
			existing: []*v1.NodePool{nodePool("a", noGPU, weight(1)), nodePool("b", noGPU, weight(2))}, pool: nodePool("c", noGPU, weight(3)), deny: []string{
				`spec.limits[cpu]: Forbidden: rule clusterLimits (Guardrail "guardrail-0"): the declared cpu limits of all NodePools add up to 300 (this pool 100, "a" 100, "b" 100), above the cluster-wide ceiling 250; fix: lower spec.limits.cpu to at most 50, lower the other pools' limits, or raise clusterLimits.cpu in Guardrail "guardrail-0"`,
			}},
		{name: "cluster limits across three pools, fitting", guardrails: ceiling(v1alpha1.ClusterLimits{CPU: quantity("250")}),
			existing: []*v1.NodePool{nodePool("a", noGPU, weight(1)), nodePool("b", noGPU, weight(2))}, pool: nodePool("c", noGPU, weight(3), limits("cpu", "50", "memory", "100Gi"))},
		{name: "cluster memory limit, warn only", guardrails: ceiling(v1alpha1.ClusterLimits{Memory: quantity("500Gi"), Action: v1alpha1.ActionWarn}),
			existing: []*v1.NodePool{nodePool("a", noGPU, weight(1))}, pool: nodePool("b", noGPU, weight(2)), warns: []string{
				`spec.limits[memory]: rule clusterLimits (Guardrail "guardrail-0"): the declared memory limits of all NodePools add up to 800Gi (this pool 400Gi, "a" 400Gi), above the cluster-wide ceiling 500Gi`,
			}},
		{name: "cluster node limit", guardrails: ceiling(v1alpha1.ClusterLimits{Nodes: ptr(int64(8))}),
			existing: []*v1.NodePool{nodePool("a", noGPU, weight(1), limits("cpu", "10", "memory", "10Gi", "nodes", "5"))},
			pool:     nodePool("b", noGPU, weight(2), limits("cpu", "10", "memory", "10Gi", "nodes", "5")), deny: []string{
				`spec.limits[nodes]: Forbidden: rule clusterLimits (Guardrail "guardrail-0"): the declared nodes limits of all NodePools add up to 10 (this pool 5, "a" 5), above the cluster-wide ceiling 8; fix: lower spec.limits.nodes to at most 3`,
			}},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cleanup []func()
			defer func() {
				for i := len(cleanup) - 1; i >= 0; i-- {
					cleanup[i]()
				}
			}()
			for i, spec := range c.guardrails {
				g := &v1alpha1.Guardrail{ObjectMeta: objectMeta("guardrail-" + string(rune('0'+i))), Spec: spec}
				s.create(t, g)
				cleanup = append(cleanup, func() { s.remove(t, g) })
			}
			for _, np := range c.existing {
				s.create(t, np)
				cleanup = append(cleanup, func() { s.remove(t, np) })
			}
			s.warnings.take()
			np := c.pool.DeepCopy()
			err := s.client.Create(ctx, np)
			warnings := s.warnings.take()
			if err == nil {
				cleanup = append(cleanup, func() { s.remove(t, np) })
			}
			switch {
			case len(c.deny) == 0 && err != nil:
				t.Fatalf("want allowed, got %v", err)
			case len(c.deny) > 0 && err == nil:
				t.Fatalf("want denied with %q, got allowed (warnings %q)", c.deny, warnings)
			}
			for _, d := range c.deny {
				if !strings.Contains(err.Error(), d) {
					t.Errorf("denial\n  %s\nmissing\n  %s", err, d)
				}
			}
			if len(warnings) != len(c.warns) {
				t.Fatalf("warnings = %q, want %d matching %q", warnings, len(c.warns), c.warns)
			}
			for i, w := range c.warns {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d\n  %s\nmissing\n  %s", i, warnings[i], w)
				}
			}
		})
	}
	if len(cases) < 25 {
		t.Errorf("only %d NodePool cases; the issue asks for at least 25", len(cases))
	}
}

// testNodePoolUpdate: a Guardrail that tightens after a pool exists warns on unrelated updates of
// that pool instead of blocking them, but still denies a change that breaks a rule anew.
func testNodePoolUpdate(t *testing.T, s *suite) {
	ctx := context.Background()
	loose := &v1alpha1.Guardrail{ObjectMeta: objectMeta("loose"), Spec: v1alpha1.GuardrailSpec{NodePools: v1alpha1.NodePoolRules{
		RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionOff},
	}}}
	s.create(t, loose)
	np := nodePool("legacy", noGPU, limits())
	s.create(t, np)
	defer s.remove(t, np)
	s.remove(t, loose) // built-in defaults apply again: some limit required

	s.warnings.take()
	np.Spec.Template.Labels = map[string]string{"team": "a"}
	if err := s.client.Update(ctx, np); err != nil {
		t.Fatalf("unrelated update must pass: %v", err)
	}
	warnings := s.warnings.take()
	if len(warnings) != 1 || !strings.Contains(warnings[0], `spec.limits: rule nodePools.requireLimits (built-in default): already the case before this update: NodePool "legacy" sets no limit`) {
		t.Fatalf("warnings = %q", warnings)
	}
	s.waitCached(t, np)
	np.Spec.Template.Spec.Requirements = nodePool("legacy").Spec.Template.Spec.Requirements
	gpuOnly(np)
	err := s.client.Update(ctx, np)
	if err == nil || !strings.Contains(err.Error(), `spec.template.spec.taints: Forbidden: rule nodePools.gpu (built-in default): NodePool "legacy" can launch accelerator instance types`) {
		t.Fatalf("turning the pool into an untainted GPU pool must be denied, got %v", err)
	}
}
