package v1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// seedNodePool is the NodePool from Karpenter's docs; it must apply to Joist unchanged.
const seedNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: ["spot", "on-demand"]}
      - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  limits: {cpu: "200", memory: 400Gi}
`

func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("parsing yaml: %v", err)
	}
	return u
}

func TestCRDs(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()

	t.Run("seed NodePool applies unchanged and is defaulted", func(t *testing.T) {
		if err := e.Client.Create(ctx, fromYAML(t, seedNodePool)); err != nil {
			t.Fatalf("creating seed NodePool: %v", err)
		}
		np := &v1.NodePool{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
			t.Fatal(err)
		}
		if got := np.Spec.Template.Spec.ExpireAfter.String(); got != "720h0m0s" {
			t.Errorf("expireAfter default = %q, want 720h", got)
		}
		d := np.Spec.Disruption
		if d.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized {
			t.Errorf("consolidationPolicy default = %q", d.ConsolidationPolicy)
		}
		if d.ConsolidateAfter.IsNever() || *d.ConsolidateAfter.Duration != 0 {
			t.Errorf("consolidateAfter default = %s, want 0s", d.ConsolidateAfter)
		}
		if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" {
			t.Errorf("budgets default = %+v, want [{nodes: 10%%}]", d.Budgets)
		}
		if cpu := np.Spec.Limits["cpu"]; cpu.String() != "200" {
			t.Errorf("limits.cpu = %s", cpu.String())
		}
		if np.Spec.Template.Spec.NodeClassRef.Kind != "EC2NodeClass" {
			t.Errorf("nodeClassRef = %+v", np.Spec.Template.Spec.NodeClassRef)
		}
	})

	t.Run("Never and explicit values round-trip", func(t *testing.T) {
		doc := strings.Replace(seedNodePool, "name: general}", "name: never}", 1) + `
  weight: 50
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
    budgets:
    - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized]}
`
		doc = strings.Replace(doc, "      nodeClassRef:", "      expireAfter: Never\n      nodeClassRef:", 1)
		if err := e.Client.Create(ctx, fromYAML(t, doc)); err != nil {
			t.Fatalf("creating NodePool: %v", err)
		}
		np := &v1.NodePool{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "never"}, np); err != nil {
			t.Fatal(err)
		}
		if !np.Spec.Template.Spec.ExpireAfter.IsNever() || !np.Spec.Disruption.ConsolidateAfter.IsNever() {
			t.Errorf("want Never durations, got expireAfter=%s consolidateAfter=%s",
				np.Spec.Template.Spec.ExpireAfter, np.Spec.Disruption.ConsolidateAfter)
		}
		if np.GetWeight() != 50 || np.Spec.Disruption.Budgets[0].Duration.Duration != 8*time.Hour {
			t.Errorf("weight/budget not kept: %d %+v", np.GetWeight(), np.Spec.Disruption.Budgets[0])
		}
	})
}

// invalidCase edits the seed NodePool (as YAML text) and expects the apiserver to reject it.
type invalidCase struct {
	name    string
	edit    func(string) string
	message string
}

func replaceRequirements(reqs string) func(string) string {
	return func(doc string) string {
		start := strings.Index(doc, "      requirements:")
		end := strings.Index(doc, "      nodeClassRef:")
		return doc[:start] + "      requirements:\n" + reqs + doc[end:]
	}
}

func addToTemplateSpec(field string) func(string) string {
	return func(doc string) string {
		return strings.Replace(doc, "      nodeClassRef:", field+"\n      nodeClassRef:", 1)
	}
}

func addToSpec(field string) func(string) string {
	return func(doc string) string { return doc + field + "\n" }
}

func TestNodePoolValidation(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	cases := []invalidCase{
		{"In without values", replaceRequirements("      - {key: kubernetes.io/arch, operator: In}\n"),
			"requirements with operator 'In' must have a value defined"},
		{"Gt with two values", replaceRequirements("      - {key: example.com/cpu, operator: Gt, values: ['1', '2']}\n"),
			"must have exactly one non-negative integer value"},
		{"Lt with a non-integer", replaceRequirements("      - {key: example.com/cpu, operator: Lt, values: ['lots']}\n"),
			"must have exactly one non-negative integer value"},
		{"Gte with a negative", replaceRequirements("      - {key: example.com/cpu, operator: Gte, values: ['-1']}\n"),
			"must have exactly one non-negative integer value"},
		{"Exists with values", replaceRequirements("      - {key: example.com/gpu, operator: Exists, values: ['a']}\n"),
			"requirements with operator 'Exists' or 'DoesNotExist' must not have values"},
		{"minValues above values", replaceRequirements("      - {key: node.kubernetes.io/instance-type, operator: In, values: ['a', 'b'], minValues: 3}\n"),
			"requirements with 'minValues' must have at least that many values specified in the 'values' field"},
		{"unknown operator", replaceRequirements("      - {key: kubernetes.io/arch, operator: Between, values: ['a']}\n"),
			`Unsupported value: "Between"`},
		{"karpenter.sh requirement key", replaceRequirements("      - {key: karpenter.sh/team, operator: In, values: ['a']}\n"),
			`requirement key domain "karpenter.sh" is restricted`},
		{"hostname requirement key", replaceRequirements("      - {key: kubernetes.io/hostname, operator: In, values: ['a']}\n"),
			`requirement key "kubernetes.io/hostname" is restricted`},
		{"karpenter.sh template label", func(doc string) string {
			return strings.Replace(doc, "  template:\n", "  template:\n    metadata:\n      labels: {karpenter.sh/team: a}\n", 1)
		}, `label domain "karpenter.sh" is restricted`},
		{"hostname template label", func(doc string) string {
			return strings.Replace(doc, "  template:\n", "  template:\n    metadata:\n      labels: {kubernetes.io/hostname: a}\n", 1)
		}, `label "kubernetes.io/hostname" is restricted`},
		{"bad taint effect", addToTemplateSpec("      taints: [{key: gpu, value: 'true', effect: Sometimes}]"),
			"taint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"},
		{"bad startup taint effect", addToTemplateSpec("      startupTaints: [{key: init, effect: Never}]"),
			"startupTaint effect must be one of NoSchedule, PreferNoSchedule or NoExecute"},
		{"budget schedule without duration", addToSpec("  disruption:\n    budgets: [{nodes: '1', schedule: '@daily'}]"),
			"'schedule' must be set with 'duration'"},
		{"budget duration without schedule", addToSpec("  disruption:\n    budgets: [{nodes: '1', duration: 1h}]"),
			"'schedule' must be set with 'duration'"},
		{"budget nodes over 100%", addToSpec("  disruption:\n    budgets: [{nodes: '150%'}]"),
			"spec.disruption.budgets[0].nodes"},
		{"weight above 100", addToSpec("  weight: 101"), "should be less than or equal to 100"},
		{"weight below 1", addToSpec("  weight: 0"), "should be greater than or equal to 1"},
		{"expireAfter not a duration", addToTemplateSpec("      expireAfter: forever"), "spec.template.spec.expireAfter"},
		{"unknown consolidation policy", addToSpec("  disruption:\n    consolidationPolicy: WhenUnderutilized"),
			`Unsupported value: "WhenUnderutilized"`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fromYAML(t, tc.edit(seedNodePool))
			obj.SetName("invalid-" + strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), "%", "")))
			err := e.Client.Create(ctx, obj)
			if err == nil {
				t.Fatalf("case %d: NodePool was accepted, want rejection with %q", i, tc.message)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("rejected with\n  %v\nwant message containing\n  %s", err, tc.message)
			}
		})
	}
}

func TestImmutability(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	obj := fromYAML(t, seedNodePool)
	if err := e.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ field, value, message string }{
		{"group", "karpenter.kwok.sh", "nodeClassRef.group is immutable"},
		{"kind", "KWOKNodeClass", "nodeClassRef.kind is immutable"},
	} {
		np := &v1.NodePool{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
			t.Fatal(err)
		}
		ref := np.Spec.Template.Spec.NodeClassRef
		if tc.field == "group" {
			ref.Group = tc.value
		} else {
			ref.Kind = tc.value
		}
		err := e.Client.Update(ctx, np)
		if err == nil || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("changing nodeClassRef.%s: got %v, want %q", tc.field, err, tc.message)
		}
	}
	// The name may change: only group and kind are pinned.
	np := &v1.NodePool{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.Spec.NodeClassRef.Name = "other"
	if err := e.Client.Update(ctx, np); err != nil {
		t.Errorf("changing nodeClassRef.name: %v", err)
	}

	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.NodePoolLabelKey, Operator: "In", Values: []string{"general"}},
			},
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := e.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating NodeClaim with a karpenter.sh/nodepool requirement: %v", err)
	}
	if nc.Spec.ExpireAfter.String() != "720h0m0s" {
		t.Errorf("NodeClaim expireAfter default = %s", nc.Spec.ExpireAfter)
	}
	nc.Spec.Requirements[0].Values = []string{"other"}
	err := e.Client.Update(ctx, nc)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("updating NodeClaim spec: got %v, want \"spec is immutable\"", err)
	}
	nc2 := nc.DeepCopy()
	nc2.ResourceVersion, nc2.Name = "", "bad-claim"
	nc2.Spec.Taints = nil
	nc2.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.sh/team", Operator: "Exists"}}
	err = e.Client.Create(ctx, nc2)
	if err == nil || !strings.Contains(err.Error(), `requirement key domain "karpenter.sh" is restricted`) {
		t.Errorf("NodeClaim with karpenter.sh/team requirement: got %v", err)
	}
}
