package controllers

import (
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// sharedMaps hands every cached pod one shared copy of each map it holds equal to another cached
// pod's: labels, annotations, node selector, container requests and limits. The pods of a workload
// carry the same ones, and each is a Go map of its own after decoding (~600 bytes for a two-entry
// ResourceList, ~300 for a one-label map): 50,000 pods of a few workloads held ~45 MB of equal
// maps. Cached objects are read only (every write goes through a copy: Get deep-copies, and
// DeepCopy makes new maps), so sharing is invisible to readers.
//
// An entry lives while a pod holding it is reachable: each pod counts its entries and a cleanup
// (runtime.AddCleanup) releases them when the garbage collector frees the pod, so maps of pods long
// gone are not kept and a cluster of all-distinct pods costs only the table's bookkeeping.
type sharedMaps struct {
	mu      sync.Mutex
	entries map[string]*sharedMap
}

type sharedMap struct {
	key   string
	value any // map[string]string or corev1.ResourceList
	refs  int
}

func newSharedMaps() *sharedMaps { return &sharedMaps{entries: map[string]*sharedMap{}} }

// sharePod replaces the pod's maps with their shared copies. It is called on a pod fresh from the
// watch, before any reader sees it.
func (s *sharedMaps) sharePod(pod *corev1.Pod) {
	var held []*sharedMap
	shareStrings := func(m *map[string]string) {
		if len(*m) > 0 {
			e := s.hold(stringsKey(*m), *m)
			*m = e.value.(map[string]string)
			held = append(held, e)
		}
	}
	shareResources := func(rl *corev1.ResourceList) {
		if len(*rl) > 0 {
			e := s.hold(resourcesKey(*rl), *rl)
			*rl = e.value.(corev1.ResourceList)
			held = append(held, e)
		}
	}
	shareStrings(&pod.Labels)
	shareStrings(&pod.Annotations)
	shareStrings(&pod.Spec.NodeSelector)
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			shareResources(&cs[i].Resources.Requests)
			shareResources(&cs[i].Resources.Limits)
		}
	}
	if len(held) > 0 {
		runtime.AddCleanup(pod, s.release, held)
	}
}

// hold returns the shared entry equal to value (value itself when it is the first), counting one
// more holder.
func (s *sharedMaps) hold(key string, value any) *sharedMap {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		e = &sharedMap{key: key, value: value}
		s.entries[key] = e
	}
	e.refs++
	return e
}

// release counts the holders of entries one fewer, dropping entries nobody holds.
func (s *sharedMaps) release(entries []*sharedMap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range entries {
		if e.refs--; e.refs == 0 && s.entries[e.key] == e {
			delete(s.entries, e.key)
		}
	}
}

// size is the number of distinct maps held.
func (s *sharedMaps) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// stringsKey is an unambiguous text of m: sorted entries, each string length-prefixed.
func stringsKey(m map[string]string) string {
	var b strings.Builder
	b.WriteByte('s')
	for _, k := range slices.Sorted(maps.Keys(m)) {
		writeField(&b, k)
		writeField(&b, m[k])
	}
	return b.String()
}

// resourcesKey is an unambiguous text of rl: sorted names, each quantity as its canonical string and
// format (equal quantities written differently stay apart, as their serialisations differ).
func resourcesKey(rl corev1.ResourceList) string {
	var b strings.Builder
	b.WriteByte('r')
	for _, n := range slices.Sorted(maps.Keys(rl)) {
		q := rl[n]
		writeField(&b, string(n))
		writeField(&b, q.String())
		writeField(&b, string(q.Format))
	}
	return b.String()
}

func writeField(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
