package controllers

import (
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// sharedMaps hands every cached pod one shared copy of each map it holds equal to another cached
// pod's: labels, annotations, node selector, container requests and limits, and the trimmed
// container lists themselves. The pods of a workload
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
	value any // map[string]string, corev1.ResourceList, []corev1.Container, []corev1.Toleration or []v1.NodeSelectorRequirementWithMinValues
	refs  int
}

func newSharedMaps() *sharedMaps { return &sharedMaps{entries: map[string]*sharedMap{}} }

// sharePod replaces the pod's maps with their shared copies. It is called on a pod fresh from the
// watch, before any reader sees it.
func (s *sharedMaps) sharePod(pod *corev1.Pod) {
	var held []*sharedMap
	held = s.shareStrings(held, &pod.Labels)
	held = s.shareStrings(held, &pod.Annotations)
	held = s.shareStrings(held, &pod.Spec.NodeSelector)
	held = s.shareContainers(held, &pod.Spec.Containers)
	held = s.shareContainers(held, &pod.Spec.InitContainers)
	if len(pod.Spec.Tolerations) > 0 {
		e := s.hold(tolerationsKey(pod.Spec.Tolerations), pod.Spec.Tolerations)
		pod.Spec.Tolerations = e.value.([]corev1.Toleration)
		held = append(held, e)
	}
	internPodStrings(pod)
	if len(held) > 0 {
		runtime.AddCleanup(pod, s.release, held)
	}
}

// shareContainers gives each container its shared requests and limits, then replaces the whole
// list, as trimmed (trimContainers: name, resources, host ports, restart policy), with the shared
// copy of an equal list: the pods of a workload hold equal containers, and each decoded list is a
// slice of its own (416 bytes for one container, most of it fields the trim has emptied).
func (s *sharedMaps) shareContainers(held []*sharedMap, cs *[]corev1.Container) []*sharedMap {
	if len(*cs) == 0 {
		return held
	}
	var b strings.Builder
	b.WriteByte('c')
	for i := range *cs {
		c := &(*cs)[i]
		intern(&c.Name)
		writeField(&b, c.Name)
		for _, rl := range []*corev1.ResourceList{&c.Resources.Requests, &c.Resources.Limits} {
			if len(*rl) == 0 {
				writeField(&b, "-")
				continue
			}
			e := s.hold(resourcesKey(*rl), *rl)
			*rl = e.value.(corev1.ResourceList)
			held = append(held, e)
			writeField(&b, e.key)
		}
		writeContainerRest(&b, c)
	}
	e := s.hold(b.String(), *cs)
	*cs = e.value.([]corev1.Container)
	return append(held, e)
}

// writeContainerRest writes the rest of what trimContainers keeps of c (its resource claims, host
// ports and restart policy) into a container list's key.
func writeContainerRest(b *strings.Builder, c *corev1.Container) {
	writeField(b, strconv.Itoa(len(c.Resources.Claims)))
	for _, rc := range c.Resources.Claims {
		writeField(b, rc.Name)
		writeField(b, rc.Request)
	}
	writeField(b, strconv.Itoa(len(c.Ports)))
	for _, p := range c.Ports {
		writeField(b, p.Name)
		writeField(b, strconv.Itoa(int(p.HostPort)))
		writeField(b, strconv.Itoa(int(p.ContainerPort)))
		writeField(b, string(p.Protocol))
		writeField(b, p.HostIP)
	}
	if c.RestartPolicy != nil {
		writeField(b, string(*c.RestartPolicy))
	} else {
		writeField(b, "-")
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

// tolerationsKey is an unambiguous text of ts, in order.
func tolerationsKey(ts []corev1.Toleration) string {
	var b strings.Builder
	b.WriteByte('t')
	for _, t := range ts {
		writeField(&b, t.Key)
		writeField(&b, string(t.Operator))
		writeField(&b, t.Value)
		writeField(&b, string(t.Effect))
		if t.TolerationSeconds != nil {
			writeField(&b, strconv.FormatInt(*t.TolerationSeconds, 10))
		} else {
			writeField(&b, "-")
		}
	}
	return b.String()
}

// intern replaces *s with the process's canonical copy of its value (unique.Make). A decoded object
// holds a string of its own per field; the namespace, node name, scheduler, owner and condition
// strings of thousands of cached pods are a few distinct values. The canonical copy is kept while a
// pod holds it (the runtime may make a new one for later pods once none of its handles is left,
// which only shares less).
func intern[S ~string](s *S) {
	if *s != "" {
		*s = S(unique.Make(string(*s)).Value())
	}
}

// internPodStrings interns the pod's strings that pods commonly have equal: who owns and schedules
// it, where it runs, its policies and its conditions. Names, UIDs and resource versions are the
// pod's own.
func internPodStrings(pod *corev1.Pod) {
	intern(&pod.Namespace)
	intern(&pod.GenerateName)
	internOwners(pod.OwnerReferences)
	sp := &pod.Spec
	for _, f := range []*string{&sp.NodeName, &sp.SchedulerName, &sp.ServiceAccountName, &sp.DeprecatedServiceAccount, &sp.PriorityClassName} {
		intern(f)
	}
	intern(&sp.RestartPolicy)
	intern(&sp.DNSPolicy)
	st := &pod.Status
	intern(&st.Phase)
	intern(&st.QOSClass)
	intern(&st.NominatedNodeName)
	intern(&st.Reason)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		intern(&c.Type)
		intern(&c.Status)
		intern(&c.Reason)
		intern(&c.Message)
	}
}

// shareNode gives the node the shared copies of its annotations, capacity and allocatable (equal
// for the nodes of one instance type) and interns its label keys and values, taints, conditions and
// system info: a node's labels are its own map (its hostname differs), but their strings are the same
// few dozen across the cluster. It is called on a node fresh from the watch, before any reader sees
// it.
func (s *sharedMaps) shareNode(node *corev1.Node) {
	var held []*sharedMap
	held = s.shareStrings(held, &node.Annotations)
	held = s.shareResources(held, &node.Status.Capacity)
	held = s.shareResources(held, &node.Status.Allocatable)
	node.Labels = internedMap(node.Labels)
	internTaints(node.Spec.Taints)
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		intern(&c.Type)
		intern(&c.Status)
		intern(&c.Reason)
		intern(&c.Message)
	}
	ni := &node.Status.NodeInfo
	for _, f := range []*string{&ni.KernelVersion, &ni.OSImage, &ni.ContainerRuntimeVersion, &ni.KubeletVersion, &ni.KubeProxyVersion, &ni.OperatingSystem, &ni.Architecture} {
		intern(f)
	}
	intern(&node.Status.Phase)
	if len(held) > 0 {
		runtime.AddCleanup(node, s.release, held)
	}
}

// shareClaim gives the claim the shared copies of its annotations, requirements, requests, capacity
// and allocatable (equal for the claims of one pool and type) and interns its label keys and values,
// finalizers, owners, taints, node class and conditions. It is called on a claim fresh from the
// watch, before any reader sees it; the claims are JSON, whose decoding makes every string and map
// anew per event.
func (s *sharedMaps) shareClaim(nc *v1.NodeClaim) {
	var held []*sharedMap
	held = s.shareStrings(held, &nc.Annotations)
	held = s.shareResources(held, &nc.Spec.Resources.Requests)
	held = s.shareResources(held, &nc.Status.Capacity)
	held = s.shareResources(held, &nc.Status.Allocatable)
	if len(nc.Spec.Requirements) > 0 {
		e := s.hold(requirementsKey(nc.Spec.Requirements), nc.Spec.Requirements)
		nc.Spec.Requirements = e.value.([]v1.NodeSelectorRequirementWithMinValues)
		held = append(held, e)
	}
	nc.Labels = internedMap(nc.Labels)
	for i := range nc.Finalizers {
		intern(&nc.Finalizers[i])
	}
	internOwners(nc.OwnerReferences)
	internTaints(nc.Spec.Taints)
	internTaints(nc.Spec.StartupTaints)
	if ref := nc.Spec.NodeClassRef; ref != nil {
		intern(&ref.Group)
		intern(&ref.Kind)
		intern(&ref.Name)
	}
	intern(&nc.Status.ImageID)
	internConditions(nc.Status.Conditions)
	if len(held) > 0 {
		runtime.AddCleanup(nc, s.release, held)
	}
}

// shareStrings replaces *m with its shared copy, adding the entry to held.
func (s *sharedMaps) shareStrings(held []*sharedMap, m *map[string]string) []*sharedMap {
	if len(*m) == 0 {
		return held
	}
	e := s.hold(stringsKey(*m), *m)
	*m = e.value.(map[string]string)
	return append(held, e)
}

// shareResources replaces *rl with its shared copy, adding the entry to held.
func (s *sharedMaps) shareResources(held []*sharedMap, rl *corev1.ResourceList) []*sharedMap {
	if len(*rl) == 0 {
		return held
	}
	e := s.hold(resourcesKey(*rl), *rl)
	*rl = e.value.(corev1.ResourceList)
	return append(held, e)
}

// internedMap is m with its keys and values interned (a new map: keys cannot be replaced in place).
func internedMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

func internTaints(ts []corev1.Taint) {
	for i := range ts {
		intern(&ts[i].Key)
		intern(&ts[i].Value)
		intern(&ts[i].Effect)
	}
}

func internOwners(refs []metav1.OwnerReference) {
	for i := range refs {
		o := &refs[i]
		intern(&o.APIVersion)
		intern(&o.Kind)
		intern(&o.Name)
		intern(&o.UID)
	}
}

func internConditions(cs []metav1.Condition) {
	for i := range cs {
		intern(&cs[i].Type)
		intern(&cs[i].Status)
		intern(&cs[i].Reason)
		intern(&cs[i].Message)
	}
}

// requirementsKey is an unambiguous text of rs, in order.
func requirementsKey(rs []v1.NodeSelectorRequirementWithMinValues) string {
	var b strings.Builder
	b.WriteByte('q')
	for _, r := range rs {
		writeField(&b, r.Key)
		writeField(&b, string(r.Operator))
		writeField(&b, strconv.Itoa(len(r.Values)))
		for _, v := range r.Values {
			writeField(&b, v)
		}
		if r.MinValues != nil {
			writeField(&b, strconv.Itoa(*r.MinValues))
		} else {
			writeField(&b, "-")
		}
	}
	return b.String()
}
