// Package pdbcases holds the PodDisruptionBudget cases every reader of PDBs is tested against (the
// pure policy, the disruption controller, `joist simulate --consolidate`), so all three agree with
// the eviction API by the same table. Only tests import it.
package pdbcases

import (
	_ "embed"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

//go:embed cases.yaml
var casesYAML []byte

// Namespace is the namespace of every case's pod.
const Namespace = "shop"

// Case is one PDB situation and its expected verdict.
type Case struct {
	Name string                         `json:"name"`
	PDBs []policyv1.PodDisruptionBudget `json:"pdbs"`
	Pod  struct {
		Labels map[string]string `json:"labels"`
	} `json:"pod"`
	// Ready is the pod's Ready condition (true when absent).
	Ready *bool `json:"ready"`
	// BlockedBy is namespace/name of the PDB that keeps the node, "" when none.
	BlockedBy string `json:"blockedBy"`
}

// Cases returns the table, freshly decoded (callers may change what they get).
func Cases() []Case {
	var out []Case
	if err := yaml.UnmarshalStrict(casesYAML, &out); err != nil {
		panic(fmt.Sprintf("pdbcases: cases.yaml: %v", err))
	}
	return out
}

// NewPod returns the case's pod, named name, bound to node, Running, with its Ready condition.
func (c Case) NewPod(name, node string) *corev1.Pod {
	ready := corev1.ConditionTrue
	if c.Ready != nil && !*c.Ready {
		ready = corev1.ConditionFalse
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: c.Pod.Labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
	}
}

// PDBPointers returns the case's PDBs as pointers.
func (c Case) PDBPointers() []*policyv1.PodDisruptionBudget {
	out := make([]*policyv1.PodDisruptionBudget, len(c.PDBs))
	for i := range c.PDBs {
		out[i] = &c.PDBs[i]
	}
	return out
}
