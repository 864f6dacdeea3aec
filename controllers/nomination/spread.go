package nomination

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// spreadPods remembers the planned pods whose placement counts pods on other nodes (topology
// spread, pod affinity or anti-affinity), noted when they are planned: a pod's spec cannot change
// these fields, so the release decides whether a batch goes out together without reading its pods.
type spreadPods struct {
	mu   sync.Mutex
	pods map[types.UID]struct{}
}

func newSpreadPods() *spreadPods { return &spreadPods{pods: map[types.UID]struct{}{}} }

// note records the pod if its placement counts other nodes' pods.
func (s *spreadPods) note(pod *corev1.Pod) {
	if !countsOtherNodes(pod) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod.UID] = struct{}{}
}

// anyOf reports whether any of the pods was noted.
func (s *spreadPods) anyOf(pods []types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, uid := range pods {
		if _, ok := s.pods[uid]; ok {
			return true
		}
	}
	return false
}

// keepOnly forgets the pods keep is false for.
func (s *spreadPods) keepOnly(keep func(types.UID) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid := range s.pods {
		if !keep(uid) {
			delete(s.pods, uid)
		}
	}
}

// countsOtherNodes reports whether where the pod may go depends on the pods of other nodes.
func countsOtherNodes(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return len(pod.Spec.TopologySpreadConstraints) > 0 || (a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil))
}
