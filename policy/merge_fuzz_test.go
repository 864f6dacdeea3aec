package policy

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// FuzzMergeGuardrails decodes arbitrary Guardrails (as the apiserver may store them, validated or
// not), validates and merges them and runs every consumer of the merged policy: no panic, and
// merging is independent of the order the Guardrails are listed in.
func FuzzMergeGuardrails(f *testing.F) {
	f.Add([]byte(`{"spec":{"clusterLimits":{"cpu":"100","memory":"1Ti","nodes":5}}}`), []byte(`{"spec":{"clusterLimits":{"cpu":"50"}}}`), "team-a")
	f.Add([]byte(`{"spec":{"nodePoolBindings":[{"namespaceSelector":{"matchLabels":{"team":"a"}},"nodePools":["a","b"]}]}}`),
		[]byte(`{"spec":{"nodePoolBindings":[{"namespaceSelector":{},"nodePools":["b"]}],"podOptOut":{"namespaceSelector":{"matchExpressions":[{"key":"x","operator":"Exists"}]}}}}`), "a")
	f.Add([]byte(`{"spec":{"podDefaults":[{"defaultRequests":{"cpu":"1e21","memory":"-1"},"defaultLimits":{"memory":"10Pi"},"alignNonCPURequests":true}]}}`),
		[]byte(`{"spec":{"doNotDisrupt":{"action":"warn","maxDuration":"1h","allowForever":false}}}`), "")
	f.Add([]byte(`{"spec":{"nodePools":{"requireLimits":{"action":"deny","resources":["cpu"]},"maxLimits":{"limits":{"cpu":"9999999999999999999999"}}}}}`),
		[]byte(`{"spec":{"nodePoolBindings":[{"namespaceSelector":{"matchExpressions":[{"key":"k","operator":"Bogus"}]},"nodePools":[]}]}}`), "team")
	f.Fuzz(func(t *testing.T, a, b []byte, team string) {
		var gs []v1alpha1.Guardrail
		for i, raw := range [][]byte{a, b} {
			g := v1alpha1.Guardrail{}
			if err := json.Unmarshal(raw, &g); err != nil {
				continue
			}
			g.Name = []string{"first", "second"}[i]
			_, _ = ValidateGuardrail(&g, map[string]bool{"a": true})
			gs = append(gs, g)
		}
		nsLabels := map[string]string{"team": team}
		p := Merge(gs)
		reversed := make([]v1alpha1.Guardrail, len(gs))
		for i := range gs {
			reversed[len(gs)-1-i] = gs[i]
		}
		q := Merge(reversed)
		pools, _, bound := p.BoundNodePools(nsLabels)
		rpools, _, rbound := q.BoundNodePools(nsLabels)
		if bound != rbound || len(pools) != len(rpools) {
			t.Fatalf("bindings depend on Guardrail order: %v/%v vs %v/%v", pools, bound, rpools, rbound)
		}
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		DefaultPod(p, pod, nsLabels)
		_ = ValidatePodPlacement(p, pod, nsLabels, "")
		_ = PodOptedOut(gs, pod, nsLabels)
		_, _ = ConfineToBoundNodePools(p, pod, nsLabels)
	})
}
