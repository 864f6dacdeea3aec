package policy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/catalog"
)

// A pool that asks for an accelerator through a provider's well-known label is an accelerator pool,
// even where the installed catalog lacks the label (KWOK's catalog, or none with GPUs at all).
func TestAcceleratorIntent(t *testing.T) {
	t.Parallel()
	general := testCatalog()[:4] // no accelerator type at all
	cases := []struct {
		name    string
		opt     poolOpt
		catalog []*catalog.InstanceType
		want    string // "" when the pool is not an accelerator pool
	}{
		{"aws gpu count, catalog with a GPU type but without the label", req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpGt, "0"), testCatalog(),
			`rule nodePools.gpu (built-in default): NodePool "p" can launch accelerator instance types (requirement karpenter.k8s.aws/instance-gpu-count Gt 0) but has no NoSchedule or NoExecute taint`},
		{"aws gpu name, catalog without GPUs", req("karpenter.k8s.aws/instance-gpu-name", corev1.NodeSelectorOpIn, "a100"), general, `(requirement karpenter.k8s.aws/instance-gpu-name In [a100])`},
		{"aws gpu memory", req("karpenter.k8s.aws/instance-gpu-memory", corev1.NodeSelectorOpGt, "16000"), general, `karpenter.k8s.aws/instance-gpu-memory`},
		{"aws accelerator count", req("karpenter.k8s.aws/instance-accelerator-count", corev1.NodeSelectorOpGt, "0"), general, `karpenter.k8s.aws/instance-accelerator-count`},
		{"aws accelerator manufacturer", req("karpenter.k8s.aws/instance-accelerator-manufacturer", corev1.NodeSelectorOpIn, "aws"), general, `instance-accelerator-manufacturer`},
		{"azure gpu name", req("karpenter.azure.com/sku-gpu-name", corev1.NodeSelectorOpExists), general, `karpenter.azure.com/sku-gpu-name`},
		{"azure gpu count", req("karpenter.azure.com/sku-gpu-count", corev1.NodeSelectorOpGt, "0"), nil, `karpenter.azure.com/sku-gpu-count`},
		{"gpu count excluded", req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpDoesNotExist), general, ""},
		{"gpu count 0 only", req("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpIn, "0"), general, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			np := pool("p", c.opt)
			errs := ValidateNodePool(Merge(nil), np, NodePoolContext{Catalog: c.catalog}).Errors()
			if c.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected denial %v", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
				t.Fatalf("errs = %v\nwant one denial containing %q", errs, c.want)
			}
			// Tainted and never expiring, the pool is admitted.
			taint("nvidia.com/gpu", corev1.TaintEffectNoSchedule)(np)
			expire("Never")(np)
			if vs := ValidateNodePool(Merge(nil), np, NodePoolContext{Catalog: c.catalog}); len(vs) != 0 {
				t.Fatalf("tainted accelerator pool: %v", vs)
			}
		})
	}
}
