package benchdata

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
)

// RealisticNodePools are a realistic shape's NodePools, all without limits: "default" (weight
// 50; linux, spot or on-demand, categories c, m, r and t, either architecture), and on the
// cluster shape also "gpu" (category g, tainted nvidia.com/gpu:NoSchedule) and "data-arm64"
// (arm64 c/m/r only, labelled and tainted team=data:NoSchedule for the data team's pods).
func RealisticNodePools(shape Shape) []*v1.NodePool {
	base := func(name string, weight int32, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodePool {
		np := NodePool(shape)
		np.Name, np.UID = name, types.UID("nodepool-"+name)
		if weight != 0 {
			np.Spec.Weight = &weight
		}
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, reqs...)
		return np
	}
	in := func(key string, values ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	pools := []*v1.NodePool{base("default", 50, in(LabelInstanceCategory, "c", "m", "r", "t"))}
	if shape != EC2Cluster {
		return pools
	}
	gpu := base("gpu", 0, in(LabelInstanceCategory, "g"))
	gpu.Spec.Template.Spec.Taints = []corev1.Taint{{Key: string(ResourceGPU), Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	data := base("data-arm64", 0, in(LabelInstanceCategory, "c", "m", "r"), in(v1.LabelArch, "arm64"))
	data.Spec.Template.Labels = map[string]string{"team": "data"}
	data.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: "data", Effect: corev1.TaintEffectNoSchedule}}
	return append(pools, gpu, data)
}
