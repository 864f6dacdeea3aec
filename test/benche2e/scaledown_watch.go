package main

import (
	"cmp"
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/fields"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/joist-dev/joist/test/env"
)

// evictionWatch counts, through a watch on the pods (KWOK deletes an evicted pod at once, so a poll
// would miss it), the pods the Eviction API evicted after since, and among them those created after
// since: the scale-down only removes pods, so a pod created after it is the re-creation of a moved
// pod, and evicting it is evicting the same workload replica a second time.
type evictionWatch struct {
	since time.Time
	mu    sync.Mutex
	seen  map[string]bool
	// evicted counts evictions; again, evictions of pods re-created during the consolidation, and
	// againOn those by the node they were evicted from (which command took a moved pod again).
	evicted, again int
	againOn        map[string]int
}

func watchEvictions(ctx context.Context, cfg *rest.Config, since time.Time) *evictionWatch {
	w := &evictionWatch{since: since, seen: map[string]bool{}, againOn: map[string]int{}}
	cs := kubernetes.NewForConfigOrDie(cfg)
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "default", fields.Everything())
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: &corev1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    w.observe,
			UpdateFunc: func(_, obj any) { w.observe(obj) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				w.observe(obj)
			},
		}})
	go informer.Run(ctx.Done())
	return w
}

func (w *evictionWatch) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !podEvicted(p) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[string(p.UID)] {
		return
	}
	w.seen[string(p.UID)] = true
	w.evicted++
	if p.CreationTimestamp.After(w.since) {
		w.again++
		w.againOn[p.Spec.NodeName]++
	}
}

// againByNode lists the repeated evictions by the node they were evicted from, most first.
func (w *evictionWatch) againByNode() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	nodes := slices.Collect(maps.Keys(w.againOn))
	slices.SortFunc(nodes, func(a, b string) int { return cmp.Or(w.againOn[b]-w.againOn[a], strings.Compare(a, b)) })
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s %d", n, w.againOn[n])
	}
	return strings.Join(parts, ", ")
}

func (w *evictionWatch) counts() (evicted, again int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.evicted, w.again
}

// podEvicted reports whether the Eviction API evicted the pod (DisruptionTarget EvictionByEvictionAPI).
func podEvicted(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
			return true
		}
	}
	return false
}

// scrapeSums reads the manager's metrics and sums each named series over its labels.
func scrapeSums(ctx context.Context, url string, names ...string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	families, err := env.ScrapeMetrics(ctx, url)
	if err != nil {
		return nil, err
	}
	return env.SumSeries(families, names...), nil
}
