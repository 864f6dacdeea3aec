package benchdata

import (
	"fmt"
	"math/rand"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// The realistic shapes run workloads of the kind platform teams run on the model EC2 catalog
// (EC2InstanceTypes), with the four DaemonSets of an EKS node (EC2DaemonSets) on every node.
const (
	// EC2Services is many small microservice Deployments of mixed shapes, a third zone-spread.
	EC2Services Shape = "ec2-services"
	// EC2Caches is half memory-heavy caches (4–8 GiB per cpu), half microservices.
	EC2Caches Shape = "ec2-caches"
	// EC2Batch is microservices plus batch jobs with few large pods (4–16 cpu).
	EC2Batch Shape = "ec2-batch"
	// EC2Cluster is a whole cluster: microservices, caches, batch, a hostname anti-affinity
	// ingress, a data team on its own arm64-only NodePool and GPU training on a tainted GPU
	// NodePool.
	EC2Cluster Shape = "ec2-cluster"
)

// RealisticShapes lists the EC2-shaped benchmark shapes.
var RealisticShapes = []Shape{EC2Services, EC2Caches, EC2Batch, EC2Cluster}

// RealisticSizes are the pod counts the realistic shapes are benchmarked at.
var RealisticSizes = []int{100, 1000, 10000}

// Workload is one Deployment of a realistic shape.
type Workload struct {
	Name string
	// Weight is the workload's share of the pods not taken by fixed-size workloads.
	Weight int
	// Replicas, when set, is a fixed count (overrides Weight); Replicas(n) is called with the size.
	Replicas    func(n int) int
	CPU, Memory string
	GPU         int
	// Arch, when set, becomes a kubernetes.io/arch nodeSelector.
	Arch string
	// ZoneSpread adds a maxSkew=1 DoNotSchedule zone topology spread over the workload's pods.
	ZoneSpread bool
	// HostnameAnti adds required pod anti-affinity on kubernetes.io/hostname to its own pods.
	HostnameAnti bool
	// Team, when set, selects and tolerates that team's NodePool (label and taint team=<Team>).
	Team string
}

// ec2Microservices are 36 services with requests drawn (seed 11) from the sizes people write:
// cpu 100m–2, memory 0.5–4 GiB per cpu; a third of them zone-spread; weights 1–6.
func ec2Microservices() []Workload {
	rng := rand.New(rand.NewSource(11))
	cpus := []int64{100, 150, 200, 250, 300, 500, 750, 1000, 1500, 2000}
	ratios := []float64{0.5, 1, 1.5, 2, 3, 4}
	out := make([]Workload, 0, 36)
	for i := range 36 {
		cpu := cpus[rng.Intn(len(cpus))]
		mib := max(128, int64(float64(cpu)*ratios[rng.Intn(len(ratios))]*1.024)/64*64)
		w := Workload{Name: fmt.Sprintf("svc-%02d", i), Weight: 1 + rng.Intn(6),
			CPU: fmt.Sprintf("%dm", cpu), Memory: fmt.Sprintf("%dMi", mib), ZoneSpread: rng.Intn(3) == 0}
		switch rng.Intn(8) {
		case 0:
			w.Arch = "amd64"
		case 1:
			w.Arch = "arm64"
		}
		out = append(out, w)
	}
	return out
}

var ec2CacheWorkloads = []Workload{
	{Name: "redis-sessions", Weight: 20, CPU: "500m", Memory: "4Gi", ZoneSpread: true},
	{Name: "memcached", Weight: 25, CPU: "1", Memory: "8Gi"},
	{Name: "redis-catalog", Weight: 10, CPU: "2", Memory: "14Gi", ZoneSpread: true},
	{Name: "elasticsearch-data", Weight: 10, CPU: "2", Memory: "16Gi", Arch: "amd64"},
	{Name: "jvm-pricing", Weight: 20, CPU: "1", Memory: "5Gi"},
	{Name: "feature-store", Weight: 15, CPU: "750m", Memory: "6Gi", Arch: "arm64"},
}

var ec2BatchWorkloads = []Workload{
	{Name: "spark-executor", Weight: 40, CPU: "4", Memory: "16Gi"},
	{Name: "etl-transform", Weight: 25, CPU: "8", Memory: "16Gi"},
	{Name: "video-render", Weight: 15, CPU: "16", Memory: "32Gi", Arch: "amd64"},
	{Name: "ml-preprocess", Weight: 20, CPU: "8", Memory: "48Gi"},
}

var ec2DataTeam = []Workload{
	{Name: "data-ingest", Weight: 40, CPU: "1", Memory: "2Gi", Team: "data"},
	{Name: "data-api", Weight: 40, CPU: "500m", Memory: "1Gi", Team: "data", ZoneSpread: true},
	{Name: "data-compact", Weight: 20, CPU: "2", Memory: "8Gi", Team: "data"},
}

// scaled multiplies workload weights by f.
func scaled(ws []Workload, f int) []Workload {
	out := append([]Workload(nil), ws...)
	for i := range out {
		out[i].Weight *= f
	}
	return out
}

func clamp(x, lo, hi int) int { return max(lo, min(hi, x)) }

// RealisticWorkloads returns the workloads of a realistic shape.
func RealisticWorkloads(shape Shape) []Workload {
	svcs := ec2Microservices()
	switch shape {
	case EC2Services:
		return svcs
	case EC2Caches:
		return append(svcs, scaled(ec2CacheWorkloads, 1)...)
	case EC2Batch:
		// Weights: batch pods are ~6% of the pods but most of the cpu.
		return append(scaled(svcs, 5), scaled(ec2BatchWorkloads, 1)...)
	case EC2Cluster:
		ws := append(scaled(svcs, 10), scaled(ec2CacheWorkloads, 3)...)
		ws = append(ws, scaled(ec2BatchWorkloads, 1)...)
		ws = append(ws, scaled(ec2DataTeam, 3)...)
		ws = append(ws,
			Workload{Name: "ingress", CPU: "1", Memory: "1Gi", HostnameAnti: true, Replicas: func(n int) int { return clamp(n/100, 3, 60) }},
			Workload{Name: "train-1gpu", CPU: "6", Memory: "24Gi", GPU: 1, Replicas: func(n int) int { return clamp(n/250, 1, 40) }},
			Workload{Name: "train-4gpu", CPU: "40", Memory: "160Gi", GPU: 4, Replicas: func(n int) int { return clamp(n/1000, 0, 10) }},
		)
		return ws
	}
	return nil
}

// WorkloadPods returns n pods over workloads: fixed-size ones first, the rest by weight (the
// rounding remainder to the first weighted workloads, one pod each).
func WorkloadPods(ws []Workload, n int) []*corev1.Pod {
	counts := make([]int, len(ws))
	left, weight := n, 0
	for i, w := range ws {
		if w.Replicas != nil {
			counts[i] = min(left, w.Replicas(n))
			left -= counts[i]
		} else {
			weight += w.Weight
		}
	}
	assigned := 0
	for i, w := range ws {
		if w.Replicas == nil && weight > 0 {
			counts[i] = left * w.Weight / weight
			assigned += counts[i]
		}
	}
	for i := 0; assigned < left && weight > 0; i = (i + 1) % len(ws) {
		if ws[i].Replicas == nil && ws[i].Weight > 0 {
			counts[i]++
			assigned++
		}
	}
	pods := make([]*corev1.Pod, 0, n)
	for i, w := range ws {
		cpu, memory := resource.MustParse(w.CPU), resource.MustParse(w.Memory)
		for j := range counts[i] {
			labels := map[string]string{"app": w.Name}
			p := pod(podName(w.Name, j), labels, cpu, memory)
			sel := map[string]string{}
			if w.Arch != "" {
				sel[v1.LabelArch] = w.Arch
			}
			if w.Team != "" {
				sel["team"] = w.Team
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "team", Operator: corev1.TolerationOpEqual, Value: w.Team, Effect: corev1.TaintEffectNoSchedule})
			}
			if len(sel) > 0 {
				p.Spec.NodeSelector = sel
			}
			if w.GPU > 0 {
				gpu := *resource.NewQuantity(int64(w.GPU), resource.DecimalSI)
				p.Spec.Containers[0].Resources.Requests[ResourceGPU] = gpu
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{ResourceGPU: gpu}
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: string(ResourceGPU), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
			}
			if w.ZoneSpread {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
				}}
			}
			if w.HostnameAnti {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
					}},
				}}
			}
			pods = append(pods, p)
		}
	}
	return pods
}

// realisticInput builds a realistic shape's input: its pods, the model EC2 catalog, the EKS
// DaemonSets and its NodePools.
func realisticInput(shape Shape, n int) solver.Input {
	in := solver.Input{Pods: WorkloadPods(RealisticWorkloads(shape), n), DaemonSets: EC2DaemonSets()}
	its := EC2InstanceTypes()
	for _, np := range RealisticNodePools(shape) {
		in.NodePools = append(in.NodePools, solver.NodePoolInput{NodePool: np, InstanceTypes: its})
	}
	return in
}

// EC2DaemonSets are the DaemonSets of an EKS node, on every node (they tolerate every taint):
// VPC CNI, kube-proxy, EBS CSI node and a log agent — 275m cpu and 456 MiB in all — plus the
// NVIDIA device plugin on GPU types only.
func EC2DaemonSets() []*appsv1.DaemonSet {
	mk := func(name, cpu, memory string, sel map[string]string) *appsv1.DaemonSet {
		labels := map[string]string{"app": name}
		return &appsv1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						NodeSelector: sel,
						Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						Containers: []corev1.Container{{
							Name: name, Image: "registry.k8s.io/pause:3.10",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
							}},
						}},
					},
				},
			},
		}
	}
	return []*appsv1.DaemonSet{
		mk("aws-node", "50m", "64Mi", nil),
		mk("kube-proxy", "100m", "64Mi", nil),
		mk("ebs-csi-node", "25m", "128Mi", nil),
		mk("log-agent", "100m", "200Mi", nil),
		mk("nvidia-device-plugin", "50m", "100Mi", map[string]string{LabelInstanceCategory: "g"}),
	}
}
