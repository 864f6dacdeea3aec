package consolidatebench

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// The round-robin cluster of issue #21's targets: 1,000 on-demand nodes of 4, 8 and 16 vCPU in
// turn, over three zones in turn, each running ten pods that together request 30–40 % of its cpu
// and memory, owned by 50 ReplicaSets, no scheduling constraints; one NodePool allowing spot and
// on-demand over a 400-type catalog (Catalog400).

// Catalog400 is 400 instance types: type i has i+1 vCPU, 2(i+1) GiB and 10(i+1) pods, no overhead;
// on-demand costs (0.024·vCPU + 0.006·GiB)·(1 ± 4 %) per hour (a fixed draw per type) and spot 0.7×
// that, in each of the three zones.
func Catalog400() []*catalog.InstanceType {
	rng := rand.New(rand.NewPCG(21, 400))
	its := make([]*catalog.InstanceType, 400)
	for i := range its {
		vcpu, gib := i+1, 2*(i+1)
		od := (0.024*float64(vcpu) + 0.006*float64(gib)) * (1 + 0.08*(rng.Float64()-0.5))
		it := &catalog.InstanceType{
			Name: fmt.Sprintf("rr-%03d", vcpu),
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(int64(vcpu), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(gib)<<30, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(10*vcpu), resource.DecimalSI),
			},
			Labels: map[string]string{v1.LabelArch: "amd64", v1.LabelOS: "linux"},
		}
		for _, z := range Zones {
			it.Offerings = append(it.Offerings,
				catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: od, Available: true},
				catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: 0.7 * od, Available: true})
		}
		its[i] = it
	}
	return its
}

// RoundRobinPool allows both capacity types and nothing else narrows it.
func RoundRobinPool() *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: Pool, UID: types.UID("nodepool-" + Pool)}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
	}
	return np
}

// RoundRobin is the 1,000-node cluster described above.
func RoundRobin() solver.ConsolidationInput { return RoundRobinN(1000) }

// RoundRobinN is RoundRobin with n nodes. ReplicaSet k serves nodes of one size (4, 8, 16 vCPU in
// turn) with pods requesting a fraction f_k ∈ [0.30, 0.40) of a tenth of that node, so every node's
// ten pods request 30–40 % of it.
func RoundRobinN(n int) solver.ConsolidationInput {
	its := Catalog400()
	sizes := []int{4, 8, 16}
	rng := rand.New(rand.NewPCG(21, 1000))
	type rs struct {
		name     string
		cpuMilli int64
		memMi    int64
	}
	bySize := map[int][]rs{}
	for k := range 50 {
		v := sizes[k%3]
		f := 0.30 + 0.10*rng.Float64()
		bySize[v] = append(bySize[v], rs{name: fmt.Sprintf("rs-%02d", k),
			cpuMilli: int64(f * float64(v) * 1000 / 10), memMi: int64(f * float64(2*v) * 1024 / 10)})
	}
	in := solver.ConsolidationInput{Input: solver.Input{NodePools: []solver.NodePoolInput{{NodePool: RoundRobinPool(), InstanceTypes: its}}}}
	nodes := make([]solver.ExistingNode, n)
	count := map[string]int{}
	for i := range n {
		v := sizes[i%3]
		nodes[i] = node(fmt.Sprintf("rr-%04d", i), its[v-1], Zones[(i/3)%3], v1.CapacityTypeOnDemand)
		group := bySize[v]
		for j := range 10 {
			r := group[(i/3*10+j)%len(group)]
			name := fmt.Sprintf("%s-%05d", r.name, count[r.name])
			count[r.name]++
			p := &corev1.Pod{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchdata.Namespace, UID: types.UID("pod-" + name),
					Labels: map[string]string{"app": r.name},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: r.name,
						UID: types.UID("rs-" + r.name), Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    *resource.NewMilliQuantity(r.cpuMilli, resource.DecimalSI),
						corev1.ResourceMemory: *resource.NewQuantity(r.memMi<<20, resource.BinarySI),
					}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			}
			bind(&nodes[i], p)
		}
	}
	in.Nodes = nodes
	in.Candidates, in.Budgets = everyNode(nodes)
	return in
}
