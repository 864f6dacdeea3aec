package policy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// A quantity the apiserver stores as written, "1e9999999", costs over a second per exact comparison:
// the rules must refuse it by name without comparing it, and leave it out of every other rule.
func TestQuantitiesBeyondBounds(t *testing.T) {
	t.Parallel()
	huge := resource.MustParse("1e9999999")
	start := time.Now()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers: []corev1.Container{{Name: "ok", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}},
			{Name: "big", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": huge}}}},
		Overhead: corev1.ResourceList{"cpu": resource.MustParse("-1e40")},
	}}
	vs := ValidatePodQuantities(pod)
	var got []string
	for _, e := range vs.Errors() {
		got = append(got, e.Error())
	}
	want := []string{
		`spec.containers[1].resources.limits[memory]: Forbidden: rule quantities (built-in default): 1e9999999 is beyond 1e30, more than any node has; fix: set spec.containers[1].resources.limits.memory to a real amount, e.g. 500m, 8Gi or "1000"`,
		`spec.overhead[cpu]: Forbidden: rule quantities (built-in default): -10e39 is beyond 1e30`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d denials, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("denial %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}

	p := Merge([]v1alpha1.Guardrail{guardrail("defaults", v1alpha1.GuardrailSpec{PodDefaults: []v1alpha1.PodDefaults{{DefaultRequests: rl("memory", "1Gi"), DefaultLimits: rl("memory", "2Gi")}}})})
	if changes := DefaultPod(p, pod, nil); len(changes) != 0 {
		t.Errorf("DefaultPod changed a pod it must leave to validation: %v", changes)
	}

	np := pool("astronomic")
	np.Spec.Limits = map[corev1.ResourceName]resource.Quantity{"cpu": resource.MustParse("200000"), "memory": huge}
	nvs := ValidateNodePool(Merge(nil), np, NodePoolContext{})
	var denied, warned bool
	for _, v := range nvs {
		denied = denied || (v.Rule == RuleQuantities && v.Field.String() == "spec.limits[memory]")
		warned = warned || (v.Rule == RuleMaxLimits && v.Field.String() == "spec.limits[cpu]")
	}
	if !denied || !warned {
		t.Errorf("NodePool: want the memory limit denied by %s and the cpu limit still checked by %s; got %+v", RuleQuantities, RuleMaxLimits, nvs)
	}

	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s: a rule compared the huge quantity exactly (about 1 s each)", d)
	}
}
