package disruptionpolicy

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/joist-dev/joist/api/v1"
)

// A disruption command's pods are evicted largest first.
//
// An evicted pod is re-created by its controller and placed by the kube-scheduler, often before
// Joist's reservation has nominated the re-creation to the node the plan kept for it (both react to
// the same pod creation). The scheduler then puts it where its own scores say — by default the least
// allocated node, which is the command's fresh replacement — so a small pod the plan put in a gap
// on a node that stays takes room the replacement kept for a larger pod evicted after it. The larger
// pod finds no room, the provisioner buys a node for it, and the next plan removes that node again:
// on 2 December a crash trial cycled this way (replace 2 nodes by 1, buy 1 for the stranded pod)
// until its 8-minute timeout. When every larger pod of the command has landed before a smaller one
// is evicted, the re-created pods arrive largest first and whatever node the scheduler picks for
// each, the plan's room — which held them all — keeps room for the rest (first-fit decreasing).

// PodSize is what a pod requests, compared CPU first, then memory.
type PodSize struct{ MilliCPU, Memory int64 }

// SizeOf is the pod's effective requests (init containers and overhead included, as the scheduler
// counts them).
func SizeOf(p *corev1.Pod) PodSize {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return PodSize{MilliCPU: req.Cpu().MilliValue(), Memory: req.Memory().Value()}
}

// Less orders sizes: CPU first, memory breaking ties.
func (s PodSize) Less(o PodSize) bool {
	if s.MilliCPU != o.MilliCPU {
		return s.MilliCPU < o.MilliCPU
	}
	return s.Memory < o.Memory
}

// EvictNow returns which of candidates (pods of a draining node the drain may evict now) to evict
// now so that the command's pods go largest first: those of the largest size among waiting (the
// command's pods on all its nodes not evicted yet, candidates included), and none while an evicted
// pod larger than that has not landed yet (landing: sizes of evicted pods of the command whose
// re-creation is still pending). Pods that are not re-created elsewhere (DaemonSet pods) are not
// ordered: pass only movable pods.
func EvictNow(candidates, waiting []*corev1.Pod, landing []PodSize) []*corev1.Pod {
	if len(candidates) == 0 {
		return nil
	}
	top := SizeOf(candidates[0])
	for _, p := range append(append([]*corev1.Pod(nil), candidates...), waiting...) {
		if s := SizeOf(p); top.Less(s) {
			top = s
		}
	}
	for _, s := range landing {
		if top.Less(s) {
			return nil
		}
	}
	var out []*corev1.Pod
	for _, p := range candidates {
		if !SizeOf(p).Less(top) {
			out = append(out, p)
		}
	}
	return out
}

// Landing returns the sizes of the evicted (terminating) pods among evicted whose controller still
// has a pod in pending (not bound, not terminating): their re-creation has not landed yet.
func Landing(evicted, pending []*corev1.Pod) []PodSize {
	waiting := map[types.UID]bool{}
	for _, p := range pending {
		if ref := metav1.GetControllerOf(p); ref != nil && p.Spec.NodeName == "" && p.DeletionTimestamp.IsZero() {
			waiting[ref.UID] = true
		}
	}
	var out []PodSize
	for _, p := range evicted {
		if ref := metav1.GetControllerOf(p); ref != nil && !p.DeletionTimestamp.IsZero() && waiting[ref.UID] {
			out = append(out, SizeOf(p))
		}
	}
	return out
}

// CommandTargets returns the NodeClaims of the disruption command recorded on the claim
// (v1.DisruptionCommandAnnotationKey), the claim itself included; nil when it records none.
func CommandTargets(nc *v1.NodeClaim) []string {
	raw := nc.Annotations[v1.DisruptionCommandAnnotationKey]
	if raw == "" {
		return nil
	}
	var r struct {
		Targets []string `json:"targets"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil
	}
	return r.Targets
}
