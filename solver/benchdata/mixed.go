package benchdata

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// UniformPods returns n identical pods (500m cpu, 1Gi memory, label app=uniform).
func UniformPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, n)
	cpu, memory := resource.MustParse("500m"), resource.MustParse("1Gi")
	for i := range n {
		pods = append(pods, pod(podName("uniform", i), map[string]string{"app": "uniform"}, cpu, memory))
	}
	return pods
}

// Deployment is one workload of the mixed shape.
type Deployment struct {
	Name string
	// Weight is the deployment's share, in percent, of the shape's pods.
	Weight      int
	CPU, Memory string
	// Arch, when set, becomes a kubernetes.io/arch nodeSelector.
	Arch string
	// ZoneSpread adds a maxSkew=1 DoNotSchedule zone topology spread over the deployment's own pods.
	ZoneSpread bool
}

// MixedDeployments are the twenty workloads of the mixed shape; weights add up to 100.
var MixedDeployments = []Deployment{
	{Name: "web-frontend", Weight: 12, CPU: "250m", Memory: "512Mi", ZoneSpread: true},
	{Name: "api-gateway", Weight: 8, CPU: "500m", Memory: "1Gi", ZoneSpread: true},
	{Name: "checkout", Weight: 6, CPU: "1", Memory: "2Gi", Arch: "amd64", ZoneSpread: true},
	{Name: "catalog", Weight: 6, CPU: "500m", Memory: "768Mi", Arch: "arm64"},
	{Name: "search", Weight: 5, CPU: "2", Memory: "4Gi", ZoneSpread: true},
	{Name: "recommendations", Weight: 5, CPU: "1", Memory: "3Gi", Arch: "arm64"},
	{Name: "cart", Weight: 5, CPU: "250m", Memory: "256Mi"},
	{Name: "auth", Weight: 4, CPU: "250m", Memory: "384Mi", ZoneSpread: true},
	{Name: "payments", Weight: 3, CPU: "1", Memory: "1Gi", Arch: "amd64", ZoneSpread: true},
	{Name: "notifications", Weight: 4, CPU: "100m", Memory: "128Mi"},
	{Name: "image-resize", Weight: 5, CPU: "2", Memory: "2Gi", Arch: "arm64"},
	{Name: "video-transcode", Weight: 3, CPU: "4", Memory: "8Gi", Arch: "amd64"},
	{Name: "analytics-worker", Weight: 6, CPU: "1500m", Memory: "6Gi"},
	{Name: "cache", Weight: 3, CPU: "500m", Memory: "4Gi", ZoneSpread: true},
	{Name: "queue-consumer", Weight: 6, CPU: "300m", Memory: "512Mi"},
	{Name: "ml-inference", Weight: 2, CPU: "3", Memory: "12Gi", Arch: "amd64"},
	{Name: "batch-etl", Weight: 5, CPU: "2", Memory: "8Gi"},
	{Name: "reporting", Weight: 2, CPU: "1", Memory: "2Gi", Arch: "arm64"},
	{Name: "admin-ui", Weight: 1, CPU: "100m", Memory: "256Mi"},
	{Name: "event-router", Weight: 9, CPU: "200m", Memory: "300Mi"},
}

// MixedPods returns n pods spread over MixedDeployments by weight (the rounding remainder goes to
// the first deployments, one pod each). Every pod is labelled app=<deployment>.
func MixedPods(n int) []*corev1.Pod {
	counts := make([]int, len(MixedDeployments))
	assigned := 0
	for i, d := range MixedDeployments {
		counts[i] = n * d.Weight / 100
		assigned += counts[i]
	}
	for i := 0; assigned < n; i = (i + 1) % len(counts) {
		counts[i]++
		assigned++
	}
	pods := make([]*corev1.Pod, 0, n)
	for i, d := range MixedDeployments {
		cpu, memory := resource.MustParse(d.CPU), resource.MustParse(d.Memory)
		for j := range counts[i] {
			labels := map[string]string{"app": d.Name}
			p := pod(podName(d.Name, j), labels, cpu, memory)
			if d.Arch != "" {
				p.Spec.NodeSelector = map[string]string{v1.LabelArch: d.Arch}
			}
			if d.ZoneSpread {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew:           1,
					TopologyKey:       v1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector:     &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
				}}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// MixedDaemonSets is the mixed shape's one DaemonSet: a node agent (100m cpu, 128Mi) on every node.
func MixedDaemonSets() []*appsv1.DaemonSet {
	labels := map[string]string{"app": "node-agent"}
	return []*appsv1.DaemonSet{{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:  "agent",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("100m"),
							corev1.ResourceMemory: resource.MustParse("128Mi"),
						}},
					}},
				},
			},
		},
	}}
}
