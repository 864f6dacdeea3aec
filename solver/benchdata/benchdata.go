// Package benchdata generates the solver's benchmark inputs. Every generator is deterministic: the
// same shape and size always give the same pods, instance types and NodePool, so Joist's benchmarks
// and the side-by-side run against upstream Karpenter (bench/upstream) see identical inputs.
package benchdata

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// Shape names a family of benchmark inputs.
type Shape string

const (
	// Diverse is upstream Karpenter's scheduling benchmark: 400 synthetic instance types and pods split
	// in fifths between generic, zone spread, hostname spread, zone pod affinity and hostname
	// anti-affinity.
	Diverse Shape = "diverse"
	// Uniform is N identical pods on the default catalog.
	Uniform Shape = "uniform"
	// Mixed is about twenty deployments of different sizes and constraints on the default catalog.
	Mixed Shape = "mixed"
)

// Shapes lists every shape in the order benchmarks and reports use.
var Shapes = []Shape{Diverse, Uniform, Mixed}

// Sizes are the pod counts every shape is benchmarked at.
var Sizes = []int{1000, 5000, 20000}

// Namespace holds every generated pod.
const Namespace = "default"

// Input returns the solver input for shape with n pending pods: one NodePool without limits for
// the synthetic shapes, the RealisticNodePools for the realistic ones.
func Input(shape Shape, n int) (solver.Input, error) {
	var (
		pods []*corev1.Pod
		its  []*catalog.InstanceType
		in   solver.Input
	)
	switch shape {
	case Diverse:
		pods, its = DiversePods(n), UpstreamInstanceTypes()
	case Uniform:
		pods, its = UniformPods(n), CatalogInstanceTypes()
	case Mixed:
		pods, its = MixedPods(n), CatalogInstanceTypes()
		in.DaemonSets = MixedDaemonSets()
	case EC2Services, EC2Caches, EC2Batch, EC2Cluster:
		return realisticInput(shape, n), nil
	default:
		return solver.Input{}, fmt.Errorf("unknown benchmark shape %q", shape)
	}
	in.Pods = pods
	in.NodePools = []solver.NodePoolInput{{NodePool: NodePool(shape), InstanceTypes: its}}
	return in, nil
}

// MustInput is Input for callers with a known-good shape.
func MustInput(shape Shape, n int) solver.Input {
	in, err := Input(shape, n)
	if err != nil {
		panic(err)
	}
	return in
}

// NodePool is the one NodePool of a shape: named "bench-<shape>", no limits, no taints, weight
// unset. The diverse shape has no requirements (as in upstream's benchmark); the catalog shapes
// allow linux on both capacity types, the usual production setting.
func NodePool(shape Shape) *v1.NodePool {
	name := "bench-" + string(shape)
	np := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("nodepool-" + name)},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{},
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			}},
			Disruption: v1.Disruption{
				ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				Budgets:             []v1.Budget{{Nodes: "10%"}},
			},
		},
	}
	if shape != Diverse {
		np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Linux)}},
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
		}
	}
	return np
}

// pod is a pending pod with one container requesting cpu and memory.
func pod(name string, labels map[string]string, cpu, memory resource.Quantity) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: Namespace,
			// Upstream's scheduler caches per-pod data by UID, so every pod needs a distinct one.
			UID:    types.UID("pod-" + name),
			Labels: labels,
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    cpu,
					corev1.ResourceMemory: memory,
				}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}
