package termination

import (
	"context"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A drain waits on pods: its evicted pods to go, and — evicting a command's pods largest first —
// the re-creations of the larger ones to land before the smaller ones go (largestFirst). Polled
// every DrainPoll, each of those steps took up to a poll more: with the five pod sizes of the
// scale-down benchmark, several seconds per node. A pod event (a pod bound, changed or gone) wakes
// the drains that wait instead; DrainPoll stays as the fallback.

// waitingDrains are the nodes whose last drain pass left pods holding them.
type waitingDrains struct {
	mu    sync.Mutex
	nodes map[string]bool
}

func (w *waitingDrains) set(node string, waiting bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if waiting {
		w.nodes[node] = true
	} else {
		delete(w.nodes, node)
	}
}

func (w *waitingDrains) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.nodes))
	for n := range w.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// drainsWokenBy maps an event of a bound pod (one leaving a draining node, or a re-creation landing
// anywhere) to the drains waiting; none when no drain waits, so a busy cluster's pod events cost
// nothing here.
func (c *Controller) drainsWokenBy(_ context.Context, obj client.Object) []reconcile.Request {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	var out []reconcile.Request
	for _, n := range c.waiting.names() {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
	}
	return out
}
