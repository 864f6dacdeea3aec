package policy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// karpenterExamplePools are NodePools of the shapes Karpenter's aws examples/v1 use (written here,
// not copied): requirements on AWS instance category, generation, family, size and hypervisor (keys
// the demo catalog does not define), minValues, spot-only, multi-arch, Windows, large instances,
// accelerators behind a taint, weighted on-demand and spot pools. None sets a limit.
func karpenterExamplePools() []*v1.NodePool {
	r := func(key string, op corev1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
	}
	min := func(n int, req v1.NodeSelectorRequirementWithMinValues) v1.NodeSelectorRequirementWithMinValues {
		req.MinValues = &n
		return req
	}
	const (
		category   = "karpenter.k8s.aws/instance-category"
		generation = "karpenter.k8s.aws/instance-generation"
		family     = "karpenter.k8s.aws/instance-family"
		size       = "karpenter.k8s.aws/instance-size"
		cpu        = "karpenter.k8s.aws/instance-cpu"
		hypervisor = "karpenter.k8s.aws/instance-hypervisor"
		in, notIn  = corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn
	)
	mk := func(name string, weight int32, taints []corev1.Taint, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodePool {
		np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
		np.Spec.Template.Spec.Requirements = reqs
		np.Spec.Template.Spec.Taints = taints
		np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("720h")
		if weight != 0 {
			np.Spec.Weight = &weight
		}
		return np
	}
	gpuTaint := []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	return []*v1.NodePool{
		mk("general-purpose", 0, nil, r(v1.LabelArch, in, "amd64"), r(v1.LabelOS, in, "linux"), r(v1.CapacityTypeLabelKey, in, "on-demand"),
			r(category, in, "c", "m", "r"), r(generation, corev1.NodeSelectorOpGt, "2")),
		mk("spot-only", 0, nil, r(v1.CapacityTypeLabelKey, in, "spot"), r(category, in, "c", "m", "r"), r(generation, corev1.NodeSelectorOpGt, "2")),
		mk("multi-arch", 0, nil, r(v1.LabelArch, in, "amd64", "arm64"), r(v1.CapacityTypeLabelKey, in, "spot", "on-demand"), r(category, in, "c", "m", "r")),
		mk("min-values", 0, nil, r(v1.LabelArch, in, "amd64"), min(2, r(category, in, "c", "m", "r")), min(5, r(family, corev1.NodeSelectorOpExists)),
			min(10, r(v1.LabelInstanceType, corev1.NodeSelectorOpExists))),
		mk("windows", 0, []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}}, r(v1.LabelOS, in, "windows"), r(category, in, "c", "m", "r")),
		mk("large-instances", 0, nil, r(cpu, corev1.NodeSelectorOpGt, "31"), r(size, notIn, "nano", "micro", "small", "medium", "large")),
		mk("instance-families", 0, nil, r(family, in, "m5", "m5d", "c5", "c5d", "r5"), r(hypervisor, in, "nitro")),
		mk("nvidia-gpu", 0, gpuTaint, r(category, in, "g", "p"), r("karpenter.k8s.aws/instance-gpu-manufacturer", in, "nvidia")),
		mk("on-demand-weighted", 50, nil, r(v1.CapacityTypeLabelKey, in, "on-demand"), r(category, in, "c", "m", "r")),
		mk("spot-fallback", 10, nil, r(v1.CapacityTypeLabelKey, in, "spot"), r(category, in, "c", "m", "r")),
		mk("zonal", 0, nil, r(v1.LabelTopologyZone, in, "test-zone-a", "test-zone-b"), r(category, in, "c", "m")),
		mk("no-requirements", 0, nil),
	}
}

// TestKarpenterExamplePools: with a limit each pool is admitted (warnings allowed); as published,
// without a limit, each is denied by the limits rule alone.
func TestKarpenterExamplePools(t *testing.T) {
	t.Parallel()
	p := Merge(nil)
	for _, np := range karpenterExamplePools() {
		t.Run(np.Name, func(t *testing.T) {
			c := NodePoolContext{Catalog: catalog.Default()}
			errs, _ := ValidateNodePool(p, np, c).Split()
			if len(errs) != 1 || errs[0].Field != "spec.limits" {
				t.Errorf("without a limit: %v, want only the limits rule's denial", errs)
			}
			for _, limits := range []corev1.ResourceList{
				{corev1.ResourceCPU: resource.MustParse("100")},
				{corev1.ResourceMemory: resource.MustParse("1000Gi")},
				{ResourceNodes: resource.MustParse("20")},
			} {
				bounded := np.DeepCopy()
				bounded.Spec.Limits = v1.Limits(limits)
				if errs, _ := ValidateNodePool(p, bounded, c).Split(); len(errs) != 0 {
					t.Errorf("with limits %v: denied: %v", limits, errs)
				}
			}
		})
	}
}
