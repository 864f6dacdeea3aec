package disruptionpolicy

import (
	corev1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/solver"
)

// Confine returns in with every pod the plan may move (those on in's nodes and the pending ones)
// confined to the NodePools its namespace is bound to by the Guardrails' nodePoolBindings, as the
// provisioner confines pending pods: a consolidation or drift replacement must not put a tenant's
// pods on a pool its namespace may not use. nsLabels are the namespaces' labels by name (a namespace
// missing there has only its kubernetes.io/metadata.name label, which the apiserver always sets).
// Only the solver's copies change; in's slices are not modified.
func Confine(in solver.Input, guardrails []policyv1alpha1.Guardrail, nsLabels map[string]map[string]string) solver.Input {
	bindings := false
	for i := range guardrails {
		bindings = bindings || len(guardrails[i].Spec.NodePoolBindings) > 0
	}
	if !bindings {
		return in
	}
	c := confiner{guardrails: guardrails, merged: policy.Merge(guardrails), nsLabels: nsLabels}
	nodes := make([]solver.ExistingNode, len(in.Nodes))
	for i, n := range in.Nodes {
		n.Pods = c.pods(n.Pods)
		nodes[i] = n
	}
	in.Nodes = nodes
	in.Pods = c.pods(in.Pods)
	return in
}

type confiner struct {
	guardrails []policyv1alpha1.Guardrail
	merged     policy.Policy
	nsLabels   map[string]map[string]string
}

func (c confiner) labels(ns string) map[string]string {
	labels := map[string]string{}
	for k, v := range c.nsLabels[ns] {
		labels[k] = v
	}
	if _, ok := labels[corev1.LabelMetadataName]; !ok {
		labels[corev1.LabelMetadataName] = ns
	}
	return labels
}

func (c confiner) pods(pods []*corev1.Pod) []*corev1.Pod {
	if len(pods) == 0 {
		return pods
	}
	out := make([]*corev1.Pod, len(pods))
	for i, pod := range pods {
		out[i] = c.pod(pod)
	}
	return out
}

// pod confines one pod. policy.ConfineToBoundNodePools leaves bound pods alone (the provisioner
// plans only pending ones), so a bound pod is confined as the pending pod it becomes once evicted.
func (c confiner) pod(pod *corev1.Pod) *corev1.Pod {
	if !Movable(pod) {
		return pod
	}
	labels := c.labels(pod.Namespace)
	if policy.PodOptedOut(c.guardrails, pod, labels) {
		return pod
	}
	probe := pod
	if pod.Spec.NodeName != "" {
		probe = pod.DeepCopy()
		probe.Spec.NodeName = ""
	}
	confined, ok := policy.ConfineToBoundNodePools(c.merged, probe, labels)
	if !ok {
		return pod
	}
	confined.Spec.NodeName = pod.Spec.NodeName
	return confined
}
