// Package verify checks a solver plan against its input, independently of the solver's own code:
// it recomputes pod requests with the Kubernetes resource helpers, matches node affinity with the
// Kubernetes node-affinity helpers and rebuilds topology counts from the plan alone.
package verify

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

const maxErrors = 25

// Verify returns every violation it finds (up to a cap), or nil when the plan is valid.
func Verify(in solver.Input, r solver.Result) error {
	v := &verifier{in: in, r: r}
	v.run()
	if len(v.errs) == 0 {
		return nil
	}
	return errors.Join(v.errs...)
}

type verifier struct {
	in   solver.Input
	r    solver.Result
	errs []error
	// nodes of the final cluster: existing first, then planned
	nodes []*vnode
	pools map[string]solver.NodePoolInput
	keys  map[string]bool // see catalogKeys
}

// vnode is a node of the final cluster as the verifier sees it.
type vnode struct {
	name     string
	node     *corev1.Node
	zone     string
	hasZone  bool
	bound    []*corev1.Pod // already there before the plan
	placed   []*corev1.Pod // added by the plan
	planned  bool
	pool     string
	taints   []corev1.Taint
	alloc    corev1.ResourceList
	overhead corev1.ResourceList // daemonset overhead on planned nodes
	// volLimits are an existing node's volume attach limits per CSI driver
	volLimits map[string]int
}

func (v *verifier) fail(format string, args ...any) {
	if len(v.errs) < maxErrors {
		v.errs = append(v.errs, fmt.Errorf(format, args...))
	}
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// requests is the pod's effective request per the Kubernetes helpers, plus one "pods".
func requests(p *corev1.Pod) corev1.ResourceList {
	rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	rl[corev1.ResourcePods] = resource.MustParse("1")
	return rl
}

func addTo(dst corev1.ResourceList, src corev1.ResourceList) {
	for k, q := range src {
		cur := dst[k]
		cur.Add(q)
		dst[k] = cur
	}
}

func podsCapacity(rl corev1.ResourceList) corev1.ResourceList {
	out := rl.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	if _, ok := out[corev1.ResourcePods]; !ok {
		out[corev1.ResourcePods] = resource.MustParse("110")
	}
	return out
}

func (v *verifier) run() {
	v.pools = map[string]solver.NodePoolInput{}
	for _, p := range v.in.NodePools {
		if p.NodePool != nil {
			v.pools[p.NodePool.Name] = p
		}
	}
	v.checkAccounting()
	v.buildExisting()
	v.buildPlanned()
	for _, n := range v.nodes {
		v.checkNode(n)
	}
	v.checkLimits()
	v.checkTopology()
	v.checkCost()
}

// checkAccounting: every input pod appears exactly once in the result, and nothing else does.
func (v *verifier) checkAccounting() {
	want := map[string]int{}
	for _, p := range v.in.Pods {
		if p != nil {
			want[podKey(p)]++
		}
	}
	got := map[string]int{}
	for _, ep := range v.r.ExistingPlacements {
		for _, p := range ep.Pods {
			got[podKey(p)]++
		}
	}
	for _, nc := range v.r.NewNodeClaims {
		for _, p := range nc.Pods {
			got[podKey(p)]++
		}
	}
	for _, u := range v.r.Unschedulable {
		got[podKey(u.Pod)]++
		if strings.TrimSpace(u.Reason) == "" {
			v.fail("pod %s is unschedulable without a reason", podKey(u.Pod))
		}
	}
	for k, n := range want {
		if got[k] != n {
			v.fail("pod %s appears %d times in the result, want %d", k, got[k], n)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			v.fail("pod %s in the result is not an input pod", k)
		}
	}
}

func (v *verifier) buildExisting() {
	byName := map[string]*vnode{}
	for i := range v.in.Nodes {
		e := &v.in.Nodes[i]
		n := &vnode{name: e.Name, pool: e.NodePool, taints: e.Taints, alloc: podsCapacity(e.Allocatable), volLimits: e.VolumeLimits}
		n.node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Labels: e.Labels}}
		n.zone, n.hasZone = e.Labels[v1.LabelTopologyZone]
		for _, p := range e.Pods {
			if p != nil && !terminal(p) {
				n.bound = append(n.bound, p)
			}
		}
		byName[e.Name] = n
		v.nodes = append(v.nodes, n)
	}
	for _, ep := range v.r.ExistingPlacements {
		n, ok := byName[ep.Node]
		if !ok {
			v.fail("placement on unknown node %q", ep.Node)
			continue
		}
		n.placed = append(n.placed, ep.Pods...)
	}
}
