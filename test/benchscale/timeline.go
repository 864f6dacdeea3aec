package main

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	v1 "github.com/joist-dev/joist/api/v1"
)

// timeline records when the run's milestones happened, from the stand-in's informers: nodes
// appearing, turning Ready, losing the not-ready taint (the faker) and the unregistered taint
// (Joist's release), and pods being bound. Times are those the informer saw, so a few ms late.
type timeline struct {
	mu                                sync.Mutex
	nodeSeen, nodeReady, notReadyGone map[string]time.Time
	released                          map[string]time.Time
	firstBound, lastBound             time.Time
	bound                             int
}

func newTimeline() *timeline {
	return &timeline{nodeSeen: map[string]time.Time{}, nodeReady: map[string]time.Time{}, notReadyGone: map[string]time.Time{},
		released: map[string]time.Time{}}
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func (t *timeline) node(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	first := func(m map[string]time.Time) {
		if _, ok := m[n.Name]; !ok {
			m[n.Name] = now
		}
	}
	first(t.nodeSeen)
	if ready(n) {
		first(t.nodeReady)
	}
	if !hasTaint(n, corev1.TaintNodeNotReady) {
		first(t.notReadyGone)
	}
	if !hasTaint(n, v1.UnregisteredTaintKey) {
		first(t.released)
	}
}

func (t *timeline) pod(old, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	if o, ok := old.(*corev1.Pod); ok && o.Spec.NodeName != "" {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bound == 0 {
		t.firstBound = now
	}
	t.lastBound = now
	t.bound++
}

func (t *timeline) handlers() (nodes, pods toolscache.ResourceEventHandlerFuncs) {
	nodes = toolscache.ResourceEventHandlerFuncs{AddFunc: t.node, UpdateFunc: func(_, obj any) { t.node(obj) }}
	pods = toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { t.pod(nil, obj) }, UpdateFunc: t.pod}
	return nodes, pods
}

// summary is the milestones after start (the first pod's creation): "first–last" per phase.
func (t *timeline) summary(start, created time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	span := func(m map[string]time.Time) string {
		if len(m) == 0 {
			return "–"
		}
		var lo, hi time.Time
		for _, at := range m {
			if lo.IsZero() || at.Before(lo) {
				lo = at
			}
			if at.After(hi) {
				hi = at
			}
		}
		return fmt.Sprintf("%.1f–%.1fs", lo.Sub(start).Seconds(), hi.Sub(start).Seconds())
	}
	bound := "–"
	if t.bound > 0 {
		bound = fmt.Sprintf("%.1f–%.1fs", t.firstBound.Sub(start).Seconds(), t.lastBound.Sub(start).Seconds())
	}
	return fmt.Sprintf("pods created by %.1fs; nodes appeared %s, Ready %s, not-ready taint gone %s, released (unregistered taint gone) %s; pods bound %s",
		created.Sub(start).Seconds(), span(t.nodeSeen), span(t.nodeReady), span(t.notReadyGone), span(t.released), bound)
}
