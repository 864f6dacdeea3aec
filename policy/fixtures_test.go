package policy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

type poolOpt func(*v1.NodePool)

// pool is a safe NodePool: cpu and memory limits, on-demand, weight unset, 720h expiry.
func pool(name string, opts ...poolOpt) *v1.NodePool {
	np := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}},
			}},
			Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("400Gi")},
		},
	}
	for _, o := range opts {
		o(np)
	}
	return np
}

// anyCapacity drops the fixture's on-demand requirement: the pool launches spot when it is cheaper.
func anyCapacity(np *v1.NodePool) {
	np.Spec.Template.Spec.Requirements = slices.DeleteFunc(np.Spec.Template.Spec.Requirements, func(r v1.NodeSelectorRequirementWithMinValues) bool {
		return r.Key == v1.CapacityTypeLabelKey
	})
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

func taint(key string, effect corev1.TaintEffect) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Value: "true", Effect: effect})
	}
}

func expire(d string) poolOpt {
	return func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(d) }
}

func label(k, v string) poolOpt {
	return func(np *v1.NodePool) {
		if np.Spec.Template.Labels == nil {
			np.Spec.Template.Labels = map[string]string{}
		}
		np.Spec.Template.Labels[k] = v
	}
}

func guardrail(name string, spec v1alpha1.GuardrailSpec) v1alpha1.Guardrail {
	return v1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

func ptr[T any](v T) *T { return &v }

// testCatalog is a small provider catalog: 4 general types with spot and on-demand in two zones, and
// one GPU type.
func testCatalog() []*catalog.InstanceType {
	mk := func(name, cpu, mem, arch string, extra corev1.ResourceList) *catalog.InstanceType {
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		for k, v := range extra {
			capacity[k] = v
		}
		it := &catalog.InstanceType{Name: name, Capacity: capacity, Labels: map[string]string{
			v1.LabelArch: arch, v1.LabelOS: "linux", "example.com/family": name[:2],
		}}
		for _, z := range []string{"zone-a", "zone-b"} {
			it.Offerings = append(it.Offerings,
				catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: 0.1, Available: true},
				catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: 0.3, Available: true})
		}
		return it
	}
	return []*catalog.InstanceType{
		mk("m5.large", "2", "8Gi", "amd64", nil),
		mk("m5.xlarge", "4", "16Gi", "amd64", nil),
		mk("c6g.large", "2", "4Gi", "arm64", nil),
		mk("c6g.xlarge", "4", "8Gi", "arm64", nil),
		mk("p3.2xlarge", "8", "61Gi", "amd64", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}),
	}
}
