package solver_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

func TestResourceRequests(t *testing.T) {
	gpuTypes := append(standardTypes(),
		instanceType("g-1", "8", "32Gi", 2.0, withCapacity("nvidia.com/gpu", "1")),
		instanceType("g-4", "32", "128Gi", 7.0, withCapacity("nvidia.com/gpu", "4")))
	storageTypes := []*catalog.InstanceType{
		instanceType("s-small", "4", "16Gi", 0.2, withCapacity(corev1.ResourceEphemeralStorage, "20Gi")),
		instanceType("s-big", "4", "16Gi", 0.3, withCapacity(corev1.ResourceEphemeralStorage, "100Gi")),
	}
	cases := []struct {
		name     string
		types    []*catalog.InstanceType
		pod      *corev1.Pod
		wantType string
		reason   string
	}{
		{name: "cpu fits", pod: pod("p", "3", "1Gi"), wantType: "m-4"},
		{name: "cpu too large", pod: pod("p", "32", "1Gi"), reason: "no instance type offers 32 cpu"},
		{name: "memory fits", pod: pod("p", "1", "20Gi"), wantType: "m-8"},
		{name: "memory too large", pod: pod("p", "1", "100Gi"), reason: "no instance type offers 100Gi memory"},
		{name: "ephemeral storage", types: storageTypes, pod: pod("p", "1", "1Gi", extraRequest("ephemeral-storage", "50Gi")), wantType: "s-big"},
		{name: "ephemeral storage too large", types: storageTypes, pod: pod("p", "1", "1Gi", extraRequest("ephemeral-storage", "500Gi")), reason: "no instance type offers 500Gi ephemeral-storage"},
		{name: "extended resource", types: gpuTypes, pod: pod("p", "1", "1Gi", extraRequest("nvidia.com/gpu", "2")), wantType: "g-4"},
		{name: "extended resource too large", types: gpuTypes, pod: pod("p", "1", "1Gi", extraRequest("nvidia.com/gpu", "16")), reason: "no instance type offers 16 nvidia.com/gpu"},
		{name: "extended resource unknown to every type", pod: pod("p", "1", "1Gi", extraRequest("example.com/fpga", "1")), reason: "no instance type offers 1 example.com/fpga"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			types := tc.types
			if types == nil {
				types = standardTypes()
			}
			in := solver.Input{Pods: []*corev1.Pod{tc.pod}, NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), types)}}
			r := solve(t, in)
			if tc.reason != "" {
				wantReason(t, r, "p", tc.reason)
				return
			}
			mustPlaceAll(t, r)
			if got := nodeOf(r, "p").InstanceType.Name; got != tc.wantType {
				t.Fatalf("type %s, want %s\n%s", got, tc.wantType, summary(r))
			}
		})
	}
}

func TestPodsCapacityCounts(t *testing.T) {
	small := instanceType("tiny-pods", "16", "64Gi", 0.1, withCapacity(corev1.ResourcePods, "4"))
	in := solver.Input{Pods: pods(10, "p", "10m", "10Mi"), NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), []*catalog.InstanceType{small})}}
	r := solve(t, in)
	mustPlaceAll(t, r)
	if len(r.NewNodeClaims) != 3 {
		t.Fatalf("want 3 nodes of 4 pods, got\n%s", summary(r))
	}
}

func always() *corev1.ContainerRestartPolicy {
	p := corev1.ContainerRestartPolicyAlways
	return &p
}

func TestInitContainersAndSidecars(t *testing.T) {
	// app 500m + sidecar 1 = 1.5 cpu running; the init container after the sidecar peaks at 2+1 = 3.
	withInit := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{
			{Name: "sidecar", RestartPolicy: always(), Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1", "memory", "1Gi")}},
			{Name: "migrate", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "1Gi")}},
		}
	}
	r := solve(t, defaultInput(pod("p", "500m", "1Gi", withInit)))
	mustPlaceAll(t, r)
	nc := nodeOf(r, "p")
	if got := nc.Requests.Cpu().MilliValue(); got != 3000 {
		t.Fatalf("effective cpu %dm, want 3000m", got)
	}
	if nc.InstanceType.Name != "m-4" {
		t.Fatalf("type %s, want m-4", nc.InstanceType.Name)
	}
	// A sidecar-only pod runs app + sidecar: 1.5 cpu → m-2.
	sidecarOnly := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: always(), Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}}
	}
	r = solve(t, defaultInput(pod("s", "500m", "1Gi", sidecarOnly)))
	if got := nodeOf(r, "s").Requests.Cpu().MilliValue(); got != 1500 {
		t.Fatalf("sidecar pod effective cpu %dm, want 1500m", got)
	}
	// An init container larger than any type makes the pod unschedulable.
	bigInit := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "big", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "20")}}}
	}
	r = solve(t, defaultInput(pod("big", "1", "1Gi", bigInit)))
	wantReason(t, r, "big", "no instance type offers 20 cpu")
}

func TestPodOverhead(t *testing.T) {
	r := solve(t, defaultInput(pod("p", "3500m", "1Gi", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "1") })))
	if got := nodeOf(r, "p").InstanceType.Name; got != "m-8" {
		t.Fatalf("type %s, want m-8 (3.5 cpu + 1 overhead)", got)
	}
	r = solve(t, defaultInput(pod("q", "15500m", "1Gi", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "1") })))
	wantReason(t, r, "q", "no instance type offers 16500m cpu")
}

func TestDaemonSetOverhead(t *testing.T) {
	in := defaultInput(pod("p", "3600m", "1Gi"))
	in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "500m", "128Mi"))
	r := solve(t, in)
	nc := nodeOf(r, "p")
	if nc.InstanceType.Name != "m-8" {
		t.Fatalf("type %s, want m-8 (3.6 cpu + 0.5 daemonset)", nc.InstanceType.Name)
	}
	if got := nc.Requests.Cpu().MilliValue(); got != 4100 {
		t.Fatalf("requests cpu %dm, want 4100m including daemonset", got)
	}
	in = defaultInput(pod("q", "15800m", "1Gi"))
	in.DaemonSets = append(in.DaemonSets, daemonSet("agent", "500m", "128Mi"))
	wantReason(t, solve(t, in), "q", "no instance type offers 15800m cpu after daemonset overhead")

	// A daemonset that does not tolerate the pool's taint does not run there.
	tainted := nodePool("tainted", poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule))
	in = solver.Input{Pods: []*corev1.Pod{pod("r", "3600m", "1Gi", toleration("dedicated", "x", corev1.TaintEffectNoSchedule))},
		NodePools: []solver.NodePoolInput{poolInput(tainted, standardTypes())}, DaemonSets: in.DaemonSets}
	if got := nodeOf(solve(t, in), "r").InstanceType.Name; got != "m-4" {
		t.Fatalf("type %s, want m-4 (daemonset does not tolerate the taint)", got)
	}
	// A daemonset selecting arm64 does not run on amd64 types.
	armOnly := daemonSet("arm-agent", "1", "128Mi", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{v1.LabelArch: "arm64"} })
	in = defaultInput(pod("s", "3600m", "1Gi"))
	in.DaemonSets = []*appsv1.DaemonSet{armOnly}
	if got := nodeOf(solve(t, in), "s").InstanceType.Name; got != "m-4" {
		t.Fatalf("type %s, want m-4 (daemonset selects arm64)", got)
	}
}
