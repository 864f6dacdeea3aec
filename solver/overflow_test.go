package solver_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/solver"
)

// Quantities beyond what int64 milli-units hold (8 PiB of memory is 9.2e18 milli-bytes) must neither
// wrap negative nor make a pool's limit look exhausted.
func TestHugeQuantitiesDoNotOverflow(t *testing.T) {
	t.Run("pool limit of 10Pi memory leaves room", func(t *testing.T) {
		pi := poolInput(nodePool("default"), standardTypes())
		pi.Remaining = rl("cpu", "1000", "memory", "10Pi")
		r := solve(t, solver.Input{Pods: pods(3, "p", "1", "1Gi"), NodePools: []solver.NodePoolInput{pi}})
		mustPlaceAll(t, r)
	})
	t.Run("pool limit of 1e21 cpu leaves room", func(t *testing.T) {
		pi := poolInput(nodePool("default"), standardTypes())
		pi.Remaining = rl("cpu", "1e21")
		mustPlaceAll(t, solve(t, solver.Input{Pods: pods(2, "p", "1", "1Gi"), NodePools: []solver.NodePoolInput{pi}}))
	})
	t.Run("pod requesting 10Pi is refused with a reason, others unaffected", func(t *testing.T) {
		in := defaultInput(pod("huge", "1", "10Pi"), pod("a", "3", "12Gi"), pod("b", "3", "12Gi"))
		r := solve(t, in)
		wantReason(t, r, "huge", "no instance type offers")
		for _, name := range []string{"a", "b"} {
			if nodeOf(r, name) == nil {
				t.Fatalf("pod %s not placed\n%s", name, summary(r))
			}
		}
		if r.CostPerHour <= 0 {
			t.Fatalf("cost %v, want positive\n%s", r.CostPerHour, summary(r))
		}
	})
	t.Run("pod requesting 1e21 cpu is refused", func(t *testing.T) {
		wantReason(t, solve(t, defaultInput(pod("huge", "1e21", "1Gi"))), "huge", "no instance type offers")
	})
	// The apiserver stores "1e9999999" as written; comparing or converting it exactly takes over a
	// second each (the cost grows with the exponent), and a solve does that many times per pod.
	t.Run("pod requesting 1e9999999 is refused without arithmetic on the exponent", func(t *testing.T) {
		pods := []*corev1.Pod{pod("a", "1", "1Gi")}
		for i := range 6 {
			pods = append(pods, pod(fmt.Sprintf("huge-mem-%d", i), "1", "1e9999999"), pod(fmt.Sprintf("huge-cpu-%d", i), "1e9999999", "1Gi"))
		}
		start := time.Now()
		r := solve(t, defaultInput(pods...))
		for _, p := range pods[1:] {
			wantReason(t, r, p.Name, "no instance type offers")
		}
		if nodeOf(r, "a") == nil {
			t.Fatalf("pod a not placed\n%s", summary(r))
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("the solve took %s: quantities were converted exactly", d) // ~1 s per exact comparison
		}
	})
	t.Run("many large containers sum without wrapping", func(t *testing.T) {
		p := pod("wide", "1", "1Gi")
		for i := 0; i < 8; i++ {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('a'+i)),
				Resources: corev1.ResourceRequirements{Requests: rl("memory", "4Pi")}})
		}
		wantReason(t, solve(t, defaultInput(p)), "wide", "no instance type offers")
	})
	t.Run("instance type with 16Pi memory is usable up to the solver's 2P range", func(t *testing.T) {
		big := instanceType("huge-mem", "64", "16Pi", 50)
		types := append(standardTypes(), big)
		in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Pi"), pod("q", "1", "3Pi")}, NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), types)}}
		r := solve(t, in)
		if nc := nodeOf(r, "p"); nc == nil || nc.InstanceType.Name != "huge-mem" {
			t.Fatalf("want p on huge-mem\n%s", summary(r))
		}
		wantReason(t, r, "q", "no instance type offers over 2P memory")
	})
}
