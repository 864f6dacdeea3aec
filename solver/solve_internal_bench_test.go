package solver_test

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// upstreamTypes mirrors upstream Karpenter's fake instance types: type i has i+1 cpu, 2(i+1) GiB
// and 10(i+1) pods, priced 0.1 per cpu plus 0.1 per GB, with spot and on-demand in two zones and
// on-demand only in a third.
func upstreamTypes(n int) []*catalog.InstanceType {
	var out []*catalog.InstanceType
	for i := 0; i < n; i++ {
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(fmt.Sprint(i + 1)),
			corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 2*(i+1))),
			corev1.ResourcePods:   resource.MustParse(fmt.Sprint(10 * (i + 1))),
		}
		mem := capacity[corev1.ResourceMemory]
		price := 0.1*float64(i+1) + 0.1*mem.AsApproximateFloat64()/1e9
		it := &catalog.InstanceType{
			Name:     fmt.Sprintf("fake-it-%d", i),
			Capacity: capacity,
			Overhead: rl("cpu", "100m", "memory", "10Mi"),
			Labels:   map[string]string{v1.LabelArch: "amd64", v1.LabelOS: "linux"},
		}
		for _, o := range []struct{ z, ct string }{{"test-zone-1", "spot"}, {"test-zone-2", "spot"}, {"test-zone-1", "on-demand"}, {"test-zone-2", "on-demand"}, {"test-zone-3", "on-demand"}} {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: o.z, CapacityType: o.ct, Price: price, Available: true})
		}
		out = append(out, it)
	}
	return out
}

// diversePods: one fifth each generic, zone spread, hostname spread, zone pod affinity and
// hostname anti-affinity, with upstream's random cpu, memory and label choices.
func diversePods(count int) []*corev1.Pod {
	r := rand.New(rand.NewSource(42))
	vals := []string{"a", "b", "c", "d", "e", "f", "g"}
	cpu := []string{"100m", "250m", "500m", "1000m", "1500m"}
	mem := []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	var out []*corev1.Pod
	mk := func(kind string, i int, mods ...func(*corev1.Pod)) *corev1.Pod {
		p := pod(fmt.Sprintf("%s-%d", kind, i), cpu[r.Intn(len(cpu))], mem[r.Intn(len(mem))], mods...)
		return p
	}
	n := count / 5
	for i := 0; i < n; i++ {
		out = append(out, mk("generic", i, label("my-label", vals[r.Intn(7)])))
	}
	for i := 0; i < n; i++ {
		out = append(out, mk("zspread", i, label("my-label", vals[r.Intn(7)]),
			spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"my-label": vals[r.Intn(7)]})))
	}
	for i := 0; i < n; i++ {
		out = append(out, mk("hspread", i, label("my-label", vals[r.Intn(7)]),
			spread(v1.LabelHostname, 1, corev1.DoNotSchedule, map[string]string{"my-label": vals[r.Intn(7)]})))
	}
	for i := 0; i < n; i++ {
		out = append(out, mk("zaff", i, label("my-affinity", vals[r.Intn(7)]),
			podAffinity(v1.LabelTopologyZone, map[string]string{"my-affinity": vals[r.Intn(7)]})))
	}
	for i := 0; len(out) < count; i++ {
		out = append(out, mk("anti", i, label("app", "nginx"), podAntiAffinity(v1.LabelHostname, map[string]string{"app": "nginx"})))
	}
	return out
}

func uniformPods(count int) []*corev1.Pod { return pods(count, "uniform", "1", "1536Mi") }

func upstreamInput(ps []*corev1.Pod) solver.Input {
	return solver.Input{Pods: ps, NodePools: []solver.NodePoolInput{{NodePool: &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, InstanceTypes: upstreamTypes(400)}}}
}

// cpuSeconds is the process's user+system CPU time; on a shared machine it measures the solver's
// work better than wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func benchSolve(b *testing.B, in solver.Input) {
	var r solver.Result
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		r = solver.Solve(in)
	}
	cpu := cpuSeconds() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(len(in.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(len(in.Pods))*float64(b.N)/cpu, "pods/cpu-s")
	b.ReportMetric(float64(len(r.NewNodeClaims)), "nodes")
	b.ReportMetric(r.CostPerHour, "$/h")
	if r.LowerBoundPerHour > 0 {
		b.ReportMetric(r.CostPerHour/r.LowerBoundPerHour, "cost/LB")
	}
	b.ReportMetric(float64(len(r.Unschedulable)), "unsched")
}

func BenchmarkInternalDiverse1k(b *testing.B) { benchSolve(b, upstreamInput(diversePods(1000))) }
func BenchmarkInternalDiverse5k(b *testing.B) { benchSolve(b, upstreamInput(diversePods(5000))) }
func BenchmarkInternalUniform5k(b *testing.B) { benchSolve(b, upstreamInput(uniformPods(5000))) }
func BenchmarkInternalMixed5k(b *testing.B) {
	benchSolve(b, benchdata.MustInput(benchdata.Mixed, 5000))
}
func BenchmarkInternalDefaultUniform5k(b *testing.B) {
	benchSolve(b, benchdata.MustInput(benchdata.Uniform, 5000))
}

func TestDiversePlanVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("large plan")
	}
	in := upstreamInput(diversePods(1000))
	r := solve(t, in)
	if len(r.Unschedulable) > 0 {
		t.Fatalf("%d unschedulable, first: %s", len(r.Unschedulable), r.Unschedulable[0].Reason)
	}
	t.Logf("nodes=%d cost=%.2f lb=%.2f ratio=%.3f", len(r.NewNodeClaims), r.CostPerHour, r.LowerBoundPerHour, r.CostPerHour/r.LowerBoundPerHour)
}
