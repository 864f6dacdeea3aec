package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/test/env"
)

// A pod of a bound namespace that reached the cluster without the binding's affinity (the pod webhook
// fails open, or the tenant set the opt-out label where no Guardrail allows it) still only gets
// capacity from its bound pools; where a Guardrail allows the opt-out, the label is honoured.
func TestProvisionerEnforcesBindings(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	for name, labels := range map[string]map[string]string{
		"team-a": {"team": "a"}, "sandbox": {"team": "a", "tier": "sandbox"}, "other": {"team": "b"},
	} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	g := &policyv1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "teams"}, Spec: policyv1alpha1.GuardrailSpec{
		NodePoolBindings: []policyv1alpha1.NodePoolBinding{{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, NodePools: []string{"team-a"}}},
		PodOptOut: &policyv1alpha1.PodOptOut{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "sandbox"}}},
	}}
	if err := e.Client.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	readyPool(t, ctx, e.Client, "team-a", 10, nil)
	readyPool(t, ctx, e.Client, "shared", 100, nil) // preferred by weight: where an unconfined pod goes
	optOut := map[string]string{policyv1alpha1.OptOutLabelKey: policyv1alpha1.OptOutLabelValue}
	// A pod of a namespace no binding selects, selecting the pool reserved for team a: the pod webhook
	// would deny it, but it may have been down; the provisioner must not plan it onto team-a.
	intruder := podIn("other", "intruder", nil)
	intruder.Spec.NodeSelector = map[string]string{"karpenter.sh/nodepool": "team-a"}
	for _, pod := range []*corev1.Pod{
		podIn("team-a", "no-affinity", nil), podIn("team-a", "opted-out-anyway", optOut), podIn("sandbox", "allowed-opt-out", optOut),
		podIn("other", "neighbour", nil), intruder,
	} {
		if err := e.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	p, _, _ := testProvisioner(e.Client)
	if err := p.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	claimOf := map[string]string{} // pod → pool of its claim
	for _, pool := range []string{"team-a", "shared"} {
		for _, nc := range claimsOf(t, ctx, e.Client, pool) {
			for _, uid := range p.nominations.PodsOf(nc.Name) {
				var pods corev1.PodList
				if err := e.Client.List(ctx, &pods); err != nil {
					t.Fatal(err)
				}
				for _, pod := range pods.Items {
					if pod.UID == uid {
						claimOf[pod.Name] = pool
					}
				}
			}
		}
	}
	for pod, want := range map[string]string{"no-affinity": "team-a", "opted-out-anyway": "team-a", "allowed-opt-out": "shared", "neighbour": "shared", "intruder": ""} {
		if claimOf[pod] != want {
			t.Errorf("pod %s planned onto pool %q, want %q (plans %v)", pod, claimOf[pod], want, claimOf)
		}
	}
}

func podIn(namespace, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
}
