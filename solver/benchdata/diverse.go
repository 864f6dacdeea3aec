package benchdata

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// UpstreamInstanceTypeCount is how many instance types upstream's benchmark offers.
const UpstreamInstanceTypeCount = 400

// UpstreamZones are the zones of upstream's fake instance types. Spot is sold in the first two only.
var UpstreamZones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// UpstreamInstanceTypes returns the 400 instance types of upstream Karpenter's scheduling benchmark
// (its fake cloud provider's InstanceTypes(400)): type i has i+1 cpu, 2(i+1) GiB memory and 10(i+1)
// pods, 100m cpu and 10Mi memory kube-reserved, amd64/linux, and five available offerings (spot in
// test-zone-1 and -2, on-demand in all three zones), all at the same price:
// 0.1 × cpu + 0.1 × memory bytes / 1e9.
func UpstreamInstanceTypes() []*catalog.InstanceType {
	out := make([]*catalog.InstanceType, 0, UpstreamInstanceTypeCount)
	for i := range UpstreamInstanceTypeCount {
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(fmt.Sprintf("%d", i+1)),
			corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", (i+1)*2)),
			corev1.ResourcePods:   resource.MustParse(fmt.Sprintf("%d", (i+1)*10)),
		}
		price := upstreamPrice(capacity)
		out = append(out, &catalog.InstanceType{
			Name:     fmt.Sprintf("fake-it-%d", i),
			Capacity: capacity,
			Overhead: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("10Mi"),
			},
			Labels: map[string]string{v1.LabelArch: "amd64", v1.LabelOS: string(corev1.Linux)},
			Offerings: []catalog.Offering{
				{Zone: UpstreamZones[0], CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
				{Zone: UpstreamZones[1], CapacityType: v1.CapacityTypeSpot, Price: price, Available: true},
				{Zone: UpstreamZones[0], CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
				{Zone: UpstreamZones[1], CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
				{Zone: UpstreamZones[2], CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			},
		})
	}
	return out
}

// upstreamPrice is the fake cloud provider's price: 0.1 per cpu plus 0.1 per 1e9 bytes of memory.
func upstreamPrice(capacity corev1.ResourceList) float64 {
	return 0.1*capacity.Cpu().AsApproximateFloat64() + 0.1*capacity.Memory().AsApproximateFloat64()/1e9
}

// diverseSeed is the seed of upstream's benchmark generator; drawing in its order reproduces its pods
// for a fresh process.
const diverseSeed = 42

// DiversePods returns upstream's "diverse" pods: n/5 each of generic pods, zone topology spread,
// hostname topology spread, zone pod affinity (self-affinity) and hostname pod anti-affinity (all
// anti-affine to each other), plus generic pods for the remainder. Requests are drawn from
// cpu {100m, 250m, 500m, 1, 1.5} and memory {100Mi, 256Mi, 512Mi, 1Gi, 2Gi, 4Gi}; labels from
// "a".."g". Spread selectors are drawn independently of the pod's own labels, as upstream does.
func DiversePods(n int) []*corev1.Pod {
	g := &diverseGen{r: rand.New(rand.NewSource(diverseSeed))} //nolint:gosec // deterministic benchmark data
	fifth := n / 5
	var pods []*corev1.Pod
	pods = append(pods, g.generic("generic", fifth)...)
	pods = append(pods, g.spread("zone-spread", fifth, v1.LabelTopologyZone)...)
	pods = append(pods, g.spread("hostname-spread", fifth, v1.LabelHostname)...)
	pods = append(pods, g.affinity("zone-affinity", fifth, v1.LabelTopologyZone)...)
	pods = append(pods, g.antiAffinity("hostname-anti-affinity", fifth, v1.LabelHostname)...)
	pods = append(pods, g.generic("generic-rest", n-len(pods))...)
	return pods
}

type diverseGen struct{ r *rand.Rand }

func (g *diverseGen) labelValue() string {
	values := []string{"a", "b", "c", "d", "e", "f", "g"}
	return values[g.r.Intn(len(values))]
}

func (g *diverseGen) cpu() resource.Quantity {
	millis := []int{100, 250, 500, 1000, 1500}
	return resource.MustParse(fmt.Sprintf("%dm", millis[g.r.Intn(len(millis))]))
}

func (g *diverseGen) memory() resource.Quantity {
	mebis := []int{100, 256, 512, 1024, 2048, 4096}
	return resource.MustParse(fmt.Sprintf("%dMi", mebis[g.r.Intn(len(mebis))]))
}

func (g *diverseGen) generic(prefix string, count int) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, count)
	for i := range count {
		labels := map[string]string{"my-label": g.labelValue()}
		cpu := g.cpu()
		pods = append(pods, pod(podName(prefix, i), labels, cpu, g.memory()))
	}
	return pods
}

func (g *diverseGen) spread(prefix string, count int, key string) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, count)
	for i := range count {
		labels := map[string]string{"my-label": g.labelValue()}
		selector := map[string]string{"my-label": g.labelValue()}
		cpu := g.cpu()
		p := pod(podName(prefix, i), labels, cpu, g.memory())
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       key,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: selector},
		}}
		pods = append(pods, p)
	}
	return pods
}

func (g *diverseGen) affinity(prefix string, count int, key string) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, count)
	for i := range count {
		labels := map[string]string{"my-affinity": g.labelValue()}
		cpu := g.cpu()
		p := pod(podName(prefix, i), labels, cpu, g.memory())
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
				TopologyKey:   key,
			}},
		}}
		pods = append(pods, p)
	}
	return pods
}

func (g *diverseGen) antiAffinity(prefix string, count int, key string) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, count)
	for i := range count {
		labels := map[string]string{"app": "nginx"}
		cpu := g.cpu()
		p := pod(podName(prefix, i), labels, cpu, g.memory())
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
				TopologyKey:   key,
			}},
		}}
		pods = append(pods, p)
	}
	return pods
}

func podName(prefix string, i int) string { return fmt.Sprintf("%s-%05d", prefix, i) }

func copyLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
