package nomination

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/podkind"
)

// displacedPods remembers the pending pods whose nomination was dropped because another pod took
// their planned room (dropDisplaced), until they are planned again, bind or go. Their
// status.nominatedNodeName, if still set, is Joist's and stale: the restart path must not adopt it
// again, and the snapshot must not take it for a preemption nomination.
type displacedPods struct {
	mu   sync.Mutex
	pods map[types.UID]struct{}
}

func newDisplacedPods() *displacedPods { return &displacedPods{pods: map[types.UID]struct{}{}} }

func (d *displacedPods) add(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pods[uid] = struct{}{}
}

func (d *displacedPods) forget(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pods, uid)
}

func (d *displacedPods) has(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.pods[uid]
	return ok
}

// keepOnly forgets the pods keep is false for.
func (d *displacedPods) keepOnly(keep func(types.UID) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for uid := range d.pods {
		if !keep(uid) {
			delete(d.pods, uid)
		}
	}
}

// dropDisplaced drops the nominations a claim's node no longer has room for, so the batch being
// planned provides for those pods again, and returns their UIDs. The kube-scheduler places any pod
// it is trying on a schedulable node's free room unless a nomination holds that room; it clears a
// pod's nomination whenever the pod fails an attempt (its planned node still tainted, say), and the
// release writes it again only after the node's taint is lifted. In that window a pod of another
// batch — or one no batch has planned yet — can bind into the room: the planned pod is then left
// nominated to a full node, and before this was only planned again after its rejection expired,
// alone, buying a node of its own (TestBurstsDoNotLaunchTwice, one extra c-1x per displaced pod).
// Counted against the claim's allocatable after the pods bound to its node, the nominated pods that
// fit keep their place (in name order); the others are dropped here. Resources the allocatable does
// not list are not counted (a device plugin may not have reported them yet).
//
// onNode holds each node's bound pods that hold room, pending the pending pods by UID (podsByNode).
func (c *Controller) dropDisplaced(claims []*v1.NodeClaim, onNode map[string][]*corev1.Pod, pending map[types.UID]*corev1.Pod) []types.UID {
	var dropped []types.UID
	for _, nc := range claims {
		if nc.Status.NodeName == "" || len(nc.Status.Allocatable) == 0 || c.store.IsReserved(nc.Name) {
			continue
		}
		planned := c.store.PodsOf(nc.Name)
		if len(planned) == 0 {
			continue
		}
		nominees := make([]*corev1.Pod, 0, len(planned))
		for _, uid := range planned {
			if p := pending[uid]; p != nil {
				nominees = append(nominees, p)
			}
		}
		slices.SortFunc(nominees, func(a, b *corev1.Pod) int {
			return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
		free := freeRoom(nc.Status.Allocatable, onNode[nc.Status.NodeName])
		for _, p := range nominees {
			if !take(free, p, false) {
				c.store.ForgetPod(p.UID)
				c.displaced.add(p.UID)
				dropped = append(dropped, p.UID)
			}
		}
	}
	return dropped
}

// podsByNode returns the pods holding room on each node (bound, not finished) and the pending pods
// (not bound, not finished, not being deleted) by UID.
func podsByNode(pods []*corev1.Pod) (map[string][]*corev1.Pod, map[types.UID]*corev1.Pod) {
	onNode := map[string][]*corev1.Pod{}
	pending := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		switch {
		case p == nil || podkind.IsFinished(p):
		case p.Spec.NodeName != "":
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
		case p.DeletionTimestamp.IsZero():
			pending[p.UID] = p
		}
	}
	return onNode, pending
}

// freeRoom is the allocatable left after the pods (the pod count included).
func freeRoom(allocatable corev1.ResourceList, pods []*corev1.Pod) corev1.ResourceList {
	free := allocatable.DeepCopy()
	for _, p := range pods {
		take(free, p, true) // a bound pod holds its room, fitting or not
	}
	return free
}

// take subtracts the pod's requests (and one pod) from free if they fit, or if force, and reports
// whether they fitted.
func take(free corev1.ResourceList, p *corev1.Pod, force bool) bool {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	req[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	fits := true
	for name, q := range req {
		if have, ok := free[name]; ok && have.Cmp(q) < 0 {
			fits = false
		}
	}
	if !fits && !force {
		return false
	}
	for name, q := range req {
		if have, ok := free[name]; ok {
			have.Sub(q)
			free[name] = have
		}
	}
	return fits
}
