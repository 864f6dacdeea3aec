package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// standIn replaces kube-scheduler and KWOK, which this machine cannot run at 50,000 pods: a binder
// that places pending pods as the default scheduler would in the simple case the benchmark creates
// (the node the pod is nominated to when it fits, else the first Ready node that fits and whose
// taints it tolerates; room held by pods nominated to a node counts as taken, as the scheduler
// counts it; a pod that fits nowhere is marked PodScheduled=False/Unschedulable once), and a node
// faker that marks every new Node Ready and lifts the not-ready taint as the node lifecycle controller would. Both read through one informer each, so their own
// apiserver traffic is the binds, the status patches and one watch per kind.
type standIn struct {
	cs    kubernetes.Interface
	pods  toolscache.Store
	nodes toolscache.Store

	mu          sync.Mutex
	assumed     map[types.UID]string // bound by us, not yet seen bound
	marked      map[types.UID]bool   // marked Unschedulable once
	actedOn     map[string]string    // node name → resource version readyNodes patched
	bound       atomic.Int64
	unscheduled atomic.Int64
	// Separate queues, as separate processes do the work in a cluster: the node faker (kubelet and
	// node lifecycle controller), the binds and the Unschedulable marks (the scheduler's). One queue
	// for all left the nodes' taints waiting behind thousands of marks.
	nodeWork, bindWork, markWork chan func()
	timeline                     *timeline
}

func startStandIn(ctx context.Context, cs kubernetes.Interface, fakeNodes bool) (*standIn, error) {
	f := informers.NewSharedInformerFactory(cs, 0)
	pods, nodes := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
	tl := newTimeline()
	onNode, onPod := tl.handlers()
	if _, err := nodes.AddEventHandler(onNode); err != nil {
		return nil, err
	}
	if _, err := pods.AddEventHandler(onPod); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !toolscache.WaitForCacheSync(ctx.Done(), pods.HasSynced, nodes.HasSynced) {
		return nil, fmt.Errorf("stand-in informers did not sync")
	}
	s := &standIn{cs: cs, pods: pods.GetStore(), nodes: nodes.GetStore(), assumed: map[types.UID]string{}, marked: map[types.UID]bool{},
		actedOn: map[string]string{}, timeline: tl,
		nodeWork: make(chan func(), 100000), bindWork: make(chan func(), 100000), markWork: make(chan func(), 100000)}
	for queue, workers := range map[chan func()]int{s.nodeWork: 8, s.bindWork: 16, s.markWork: 4} {
		for range workers {
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case w := <-queue:
						w()
					}
				}
			}()
		}
	}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.readyNodes(ctx, fakeNodes)
				s.schedule(ctx)
			}
		}
	}()
	return s, nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyNodes plays the kubelet and the node lifecycle controller: it marks new Nodes Ready (as KWOK
// does for the nodes it manages; only with fakeNodes) and takes the node.kubernetes.io/not-ready
// taint, which the apiserver's TaintNodesByCondition admission puts on every new Node, off Ready
// ones (as kube-controller-manager does). Each node is acted on once per resource version.
func (s *standIn) readyNodes(ctx context.Context, fakeNodes bool) {
	for _, o := range s.nodes.List() {
		n := o.(*corev1.Node)
		isReady := ready(n)
		notReadyTaint := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		if (isReady || !fakeNodes) && !notReadyTaint {
			continue
		}
		if !isReady && !fakeNodes {
			continue
		}
		s.mu.Lock()
		done := s.actedOn[n.Name] == n.ResourceVersion
		s.actedOn[n.Name] = n.ResourceVersion
		s.mu.Unlock()
		if done {
			continue
		}
		name, taints := n.Name, n.Spec.Taints
		s.nodeWork <- func() {
			if !isReady {
				now := metav1.Now().UTC().Format(time.RFC3339)
				body := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":%q,"lastTransitionTime":%q}]}}`, now, now)
				patched, err := s.cs.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
				if err != nil {
					s.forget(name)
					return
				}
				taints = patched.Spec.Taints // the lifecycle controller lifts the taint as soon as it sees Ready
			}
			if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
				return
			}
			kept := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
			// Test-then-replace: the manager lifts its own taints concurrently.
			patch, err := json.Marshal([]map[string]any{{"op": "test", "path": "/spec/taints", "value": taints},
				{"op": "replace", "path": "/spec/taints", "value": kept}})
			if err == nil {
				_, err = s.cs.CoreV1().Nodes().Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
			}
			if err != nil {
				s.forget(name) // retried on the next tick, against the taints then
			}
		}
	}
}

func (s *standIn) forget(node string) {
	s.mu.Lock()
	delete(s.actedOn, node)
	s.mu.Unlock()
}

type room struct {
	node      *corev1.Node
	cpu, mem  int64
	pods      int64
	schedules bool
}

func podRequests(p *corev1.Pod) (cpu, mem int64) {
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	return cpu, mem
}

func (r *room) take(p *corev1.Pod) {
	cpu, mem := podRequests(p)
	r.cpu, r.mem, r.pods = r.cpu-cpu, r.mem-mem, r.pods-1
}

func (r *room) fits(p *corev1.Pod) bool {
	if !r.schedules {
		return false
	}
	cpu, mem := podRequests(p)
	if cpu > r.cpu || mem > r.mem || r.pods < 1 {
		return false
	}
	for i := range r.node.Spec.Taints {
		t := &r.node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range p.Spec.Tolerations {
			tolerated = tolerated || p.Spec.Tolerations[j].ToleratesTaint(klog.Background(), t, false)
		}
		if !tolerated {
			return false
		}
	}
	return true
}

// schedule runs one scheduling cycle over the pending pods.
func (s *standIn) schedule(ctx context.Context) {
	rooms := map[string]*room{}
	var order []string
	for _, o := range s.nodes.List() {
		n := o.(*corev1.Node)
		a := n.Status.Allocatable
		rooms[n.Name] = &room{node: n, cpu: a.Cpu().MilliValue(), mem: a.Memory().Value(), pods: a.Pods().Value(),
			schedules: ready(n) && n.DeletionTimestamp == nil && !n.Spec.Unschedulable}
		order = append(order, n.Name)
	}
	sort.Strings(order)
	var pending []*corev1.Pod
	var bound int64
	s.mu.Lock()
	for _, o := range s.pods.List() {
		p := o.(*corev1.Pod)
		node := p.Spec.NodeName
		if node != "" {
			delete(s.assumed, p.UID)
			bound++
		} else if a, ok := s.assumed[p.UID]; ok {
			node = a
		}
		if node == "" {
			if p.DeletionTimestamp == nil {
				pending = append(pending, p)
			}
			continue
		}
		if r := rooms[node]; r != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			r.take(p)
		}
	}
	s.mu.Unlock()
	s.bound.Store(bound)
	// Room held for nominated pods is taken for everyone else.
	for _, p := range pending {
		if r := rooms[p.Status.NominatedNodeName]; r != nil {
			r.take(p)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].CreationTimestamp.Before(&pending[j].CreationTimestamp) })
	first := 0
	var unscheduled int64
	for _, p := range pending {
		var at *room
		if r := rooms[p.Status.NominatedNodeName]; r != nil {
			cpu, mem := podRequests(p)
			r.cpu, r.mem, r.pods = r.cpu+cpu, r.mem+mem, r.pods+1 // its own hold
			if r.fits(p) {
				at = r
			} else {
				r.take(p)
			}
		}
		for i := first; at == nil && i < len(order); i++ {
			if r := rooms[order[i]]; r.fits(p) {
				at = r
			} else if i == first && r.schedules && r.cpu < 100 {
				first++ // full: later pods skip it
			}
		}
		if at == nil {
			unscheduled++
			s.markUnschedulable(ctx, p)
			continue
		}
		at.take(p)
		s.bind(ctx, p, at.node.Name)
	}
	s.unscheduled.Store(unscheduled)
}

func (s *standIn) bind(ctx context.Context, p *corev1.Pod, node string) {
	s.mu.Lock()
	s.assumed[p.UID] = node
	s.mu.Unlock()
	ns, name, uid := p.Namespace, p.Name, p.UID
	s.bindWork <- func() {
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := s.cs.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			s.mu.Lock()
			delete(s.assumed, uid)
			s.mu.Unlock()
		}
	}
}

func (s *standIn) markUnschedulable(ctx context.Context, p *corev1.Pod) {
	s.mu.Lock()
	done := s.marked[p.UID]
	s.marked[p.UID] = true
	s.mu.Unlock()
	if done {
		return
	}
	ns, name := p.Namespace, p.Name
	s.markWork <- func() {
		now := metav1.Now().UTC().Format(time.RFC3339)
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/%d nodes are available (benchscale stand-in binder)","lastTransitionTime":%q}]}}`,
			len(s.nodes.ListKeys()), now)
		_, _ = s.cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status")
	}
}

// emptyNodes counts Nodes with no pod bound to them.
func (s *standIn) emptyNodes() (nodes, empty int) {
	used := map[string]bool{}
	for _, o := range s.pods.List() {
		used[o.(*corev1.Pod).Spec.NodeName] = true
	}
	for _, o := range s.nodes.List() {
		nodes++
		if !used[o.(*corev1.Node).Name] {
			empty++
		}
	}
	return nodes, empty
}

// diagnose says why pods are still pending: how many nodes are Ready and schedulable, the taints
// they carry, their allocatable, and where the pending pods are nominated.
func (s *standIn) diagnose() string {
	var nodes, readyN, cordoned int
	taints := map[string]int{}
	allocs := map[string]int{}
	for _, o := range s.nodes.List() {
		n := o.(*corev1.Node)
		nodes++
		if ready(n) {
			readyN++
		}
		if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
			cordoned++
		}
		for _, t := range n.Spec.Taints {
			taints[t.Key+":"+string(t.Effect)]++
		}
		a := n.Status.Allocatable
		allocs[fmt.Sprintf("cpu=%s mem=%s pods=%s", a.Cpu(), a.Memory(), a.Pods())]++
	}
	var pending, nominated, nominatedMissing int
	for _, o := range s.pods.List() {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName != "" {
			continue
		}
		pending++
		if nn := p.Status.NominatedNodeName; nn != "" {
			nominated++
			if _, ok, _ := s.nodes.GetByKey(nn); !ok {
				nominatedMissing++
			}
		}
	}
	return fmt.Sprintf("nodes %d (Ready %d, cordoned or deleting %d), taints %v, allocatable %v; pending pods %d, nominated %d (%d to a node that does not exist)",
		nodes, readyN, cordoned, taints, allocs, pending, nominated, nominatedMissing)
}
