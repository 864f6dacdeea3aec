package disruptionpolicy

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PDBs are the cluster's PodDisruptionBudgets, read as the eviction API reads them (policy/v1):
//   - a PDB covers the pods of its own namespace its selector matches; an empty selector ({})
//     covers every pod of the namespace, a missing (nil) or invalid one none;
//   - a pod covered by more than one PDB is never evicted (the API answers 500);
//   - a pod that is not Ready may be evicted whatever the budget when the PDB's
//     unhealthyPodEvictionPolicy is AlwaysAllow, and under IfHealthyBudget (the default) when the
//     PDB already has its desired healthy pods (currentHealthy >= desiredHealthy > 0);
//   - otherwise the eviction needs status.disruptionsAllowed > 0 from a status that observed the
//     PDB's current generation;
//   - a pod that is not running yet (Pending), finished or already terminating is deleted without
//     consulting any PDB.
type PDBs struct {
	byNamespace map[string][]pdb
}

type pdb struct {
	obj      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

// NewPDBs indexes the PDBs by namespace. Nil entries are skipped.
func NewPDBs(items []*policyv1.PodDisruptionBudget) PDBs {
	out := PDBs{byNamespace: map[string][]pdb{}}
	for _, b := range items {
		if b == nil || b.Spec.Selector == nil {
			continue // a nil selector selects no pod
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			continue // the eviction API: an invalid selector matches no pod
		}
		out.byNamespace[b.Namespace] = append(out.byNamespace[b.Namespace], pdb{obj: b, selector: sel})
	}
	for _, list := range out.byNamespace {
		sort.Slice(list, func(i, j int) bool { return list[i].obj.Name < list[j].obj.Name })
	}
	return out
}

// Covering returns the PDBs whose selector covers pod, by name.
func (p PDBs) Covering(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, b := range p.byNamespace[pod.Namespace] {
		if b.selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, b.obj)
		}
	}
	return out
}

// EvictionBlocked returns the protection that makes the eviction API refuse pod now, or nil when
// an eviction would be accepted.
func (p PDBs) EvictionBlocked(pod *corev1.Pod) *Protection {
	if pod.Status.Phase == corev1.PodPending || podFinished(pod) || !pod.DeletionTimestamp.IsZero() {
		return nil
	}
	covering := p.Covering(pod)
	switch len(covering) {
	case 0:
		return nil
	case 1:
	default:
		names := make([]string, len(covering))
		for i, b := range covering {
			names[i] = b.Namespace + "/" + b.Name
		}
		return &Protection{Kind: KindPodDisruptionBudget, Namespace: covering[0].Namespace, Name: covering[0].Name,
			Pod: podName(pod), PodLevel: true,
			Message: fmt.Sprintf("pod %s is covered by %d PodDisruptionBudgets (%s); the eviction API refuses to evict a pod under more than one",
				podName(pod), len(covering), strings.Join(names, ", "))}
	}
	b := covering[0]
	if !podReady(pod) {
		policy := policyv1.IfHealthyBudget
		if b.Spec.UnhealthyPodEvictionPolicy != nil {
			policy = *b.Spec.UnhealthyPodEvictionPolicy
		}
		if policy == policyv1.AlwaysAllow ||
			(b.Status.DesiredHealthy > 0 && b.Status.CurrentHealthy >= b.Status.DesiredHealthy) {
			return nil
		}
	}
	blocked := func(why string) *Protection {
		return &Protection{Kind: KindPodDisruptionBudget, Namespace: b.Namespace, Name: b.Name, Pod: podName(pod), PodLevel: true,
			Message: fmt.Sprintf("PodDisruptionBudget %s/%s %s (pod %s)", b.Namespace, b.Name, why, podName(pod))}
	}
	switch {
	case b.Status.ObservedGeneration < b.Generation:
		return blocked(fmt.Sprintf("has a status older than its spec (observedGeneration %d < generation %d), so evictions wait",
			b.Status.ObservedGeneration, b.Generation))
	case b.Status.DisruptionsAllowed <= 0:
		return blocked(fmt.Sprintf("allows no eviction now (disruptionsAllowed %d)", b.Status.DisruptionsAllowed))
	}
	return nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podName(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
