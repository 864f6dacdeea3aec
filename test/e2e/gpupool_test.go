package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// TestGPUPoolLaunchesOnlyGPUTypes is issue #9's probe on the full stack: a NodePool requiring
// joist.dev/instance-gpu-count In [1] must launch a GPU type even for pods that request no GPU (the
// cheaper CPU types lack the label), and its node must take the pods.
func TestGPUPoolLaunchesOnlyGPUTypes(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(3 * time.Minute)
	np := kwokNodePool("gpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
		v1.NodeSelectorRequirementWithMinValues{Key: "joist.dev/instance-gpu-count", Operator: corev1.NodeSelectorOpIn, Values: []string{"1"}})
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	tolerate := func(spec *corev1.PodSpec) {
		spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	d := deployment("trainer", 2, "500m", "512Mi", tolerate)
	s.create(ctx, kwokNodeClass(0), np, d)
	s.startManager()
	s.waitRunning(ctx, 2, d.Spec.Template.Labels)
	gpuTypes := map[string]bool{}
	for _, it := range catalog.Default() {
		if it.Labels["joist.dev/instance-gpu-count"] == "1" {
			gpuTypes[it.Name] = true
		}
	}
	claims := s.claims()
	if len(claims) == 0 {
		t.Fatal("no NodeClaim launched")
	}
	for _, nc := range claims {
		if !gpuTypes[nc.Labels[v1.LabelInstanceType]] {
			t.Errorf("NodeClaim %s launched %s, not a type with joist.dev/instance-gpu-count=1\n%s", nc.Name, nc.Labels[v1.LabelInstanceType], s.describeClaims())
		}
		if !strings.HasPrefix(nc.Name, "gpu-") {
			t.Errorf("NodeClaim %s is not of pool gpu", nc.Name)
		}
	}
}
