package v1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/joist-dev/joist/test/env"
)

// templateMeta puts a metadata block into the seed NodePool's template.
func templateMeta(meta string) func(string) string {
	return func(doc string) string {
		return strings.Replace(doc, "  template:\n", "  template:\n    metadata:\n"+meta, 1)
	}
}

// Template labels end up on NodeClaims and Nodes: a value the apiserver would refuse there makes every
// launch from the pool fail, so the NodePool itself is refused, with Karpenter's restricted domains.
func TestNodePoolTemplateMetadataValidation(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	rejected := []invalidCase{
		{"label key with two slashes", templateMeta("      labels: {'example.com/a/b': x}\n"), "label keys must be valid Kubernetes label keys"},
		{"label key name too long", templateMeta("      labels: {'example.com/" + strings.Repeat("k", 64) + "': x}\n"), "label keys must be valid Kubernetes label keys"},
		{"kubernetes.io label", templateMeta("      labels: {kubernetes.io/team: a}\n"), `label domain "kubernetes.io" is restricted`},
		{"subdomain of kubernetes.io", templateMeta("      labels: {node-role.kubernetes.io/worker: ''}\n"), `label domain "kubernetes.io" is restricted`},
		{"k8s.io label", templateMeta("      labels: {example.k8s.io/team: a}\n"), `label domain "k8s.io" is restricted`},
		{"annotation key invalid", templateMeta("      annotations: {'bad key': x}\n"), "annotation keys must be valid Kubernetes annotation keys"},
	}
	for i, tc := range rejected {
		t.Run("rejects "+tc.name, func(t *testing.T) {
			obj := fromYAML(t, tc.edit(seedNodePool))
			obj.SetName(fmt.Sprintf("template-rejected-%d", i))
			err := e.Client.Create(ctx, obj)
			if err == nil {
				t.Fatalf("NodePool was accepted, want rejection with %q", tc.message)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("rejected with\n  %v\nwant message containing\n  %s", err, tc.message)
			}
		})
	}
	accepted := []string{
		"      labels: {team: a_b.c-1, example.com/tier: '', node.kubernetes.io/lifecycle: spot}\n",
		"      labels: {topology.kubernetes.io/zone: zone-a, kubernetes.io/arch: amd64, kops.k8s.io/instancegroup: ig}\n",
		"      labels: {node-restriction.kubernetes.io/team: a, karpenter.sh/capacity-type: spot}\n",
		"      annotations: {example.com/owner: 'Team A <a@example.com>', note: 'anything goes in a value'}\n",
	}
	for i, meta := range accepted {
		t.Run(fmt.Sprintf("accepts %d", i), func(t *testing.T) {
			obj := fromYAML(t, templateMeta(meta)(seedNodePool))
			obj.SetName(fmt.Sprintf("template-accepted-%d", i))
			if err := e.Client.Create(ctx, obj); err != nil {
				t.Fatalf("valid template metadata refused: %v", err)
			}
		})
	}
}
