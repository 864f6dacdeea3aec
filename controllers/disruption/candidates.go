package disruption

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/policy"
)

// InitializedSettle is how long after a node initialized its pods are taken as settled: a node that
// just initialized may look empty only because its pods have not bound yet.
const InitializedSettle = 10 * time.Second

// member is one Joist node as the disruption methods see it.
type member struct {
	claim *v1.NodeClaim
	node  *corev1.Node
	pool  *v1.NodePool
	pods  []*corev1.Pod
	// blocked says why no voluntary method may touch the node ("" when none).
	blocked string
	// lastPodEvent is when a pod last landed on or left the node (or it initialized).
	lastPodEvent time.Time
	// consolidatable: consolidateAfter has passed since lastPodEvent.
	consolidatable bool
	driftReason    string
	cost           float64
}

// members assesses every launched, registered NodeClaim not being deleted.
func (c *Controller) members(cl *cluster, now time.Time) []*member {
	var out []*member
	for _, nc := range cl.claims {
		if !nc.DeletionTimestamp.IsZero() || nc.Status.NodeName == "" {
			continue
		}
		node := cl.nodes[nc.Status.NodeName]
		pool := cl.pools[nc.Labels[v1.NodePoolLabelKey]]
		if node == nil || pool == nil {
			continue
		}
		m := &member{claim: nc, node: node, pool: pool, pods: cl.podsByNode[node.Name]}
		m.lastPodEvent = c.lastPodEvent(m, now)
		m.blocked = blockedReason(cl, m, now)
		if after := pool.Spec.Disruption.ConsolidateAfter; !after.IsNever() && m.blocked == "" {
			m.consolidatable = !now.Before(m.lastPodEvent.Add(*after.Duration))
		}
		m.cost = disruptionCost(m, now)
		if c := nc.GetCondition(v1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
			m.driftReason = c.Reason // updateStatus recomputes it; decide reads what was written
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Name < out[j].node.Name })
	return out
}

// blockedReason is why a node may not be voluntarily disrupted now, or "".
func blockedReason(cl *cluster, m *member, now time.Time) string {
	switch {
	case !m.claim.IsTrue(v1.ConditionTypeInitialized):
		return "the node is not initialized"
	case cl.disrupting(m.claim):
		return "the node is already being disrupted"
	}
	return protection(cl, m, now)
}

// protection is the do-not-disrupt annotation or PodDisruptionBudget that protects the node now, or "".
func protection(cl *cluster, m *member, now time.Time) string {
	if protected(m.node.Annotations, m.node.CreationTimestamp.Time, now) {
		return fmt.Sprintf("node %s has %s", m.node.Name, v1.DoNotDisruptAnnotationKey)
	}
	if protected(m.claim.Annotations, m.claim.CreationTimestamp.Time, now) {
		return fmt.Sprintf("nodeclaim %s has %s", m.claim.Name, v1.DoNotDisruptAnnotationKey)
	}
	for _, p := range m.pods {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if protected(p.Annotations, p.CreationTimestamp.Time, now) {
			return fmt.Sprintf("pod %s/%s has %s", p.Namespace, p.Name, v1.DoNotDisruptAnnotationKey)
		}
		if !movable(p) {
			continue
		}
		if b := cl.pdbBlocking(p); b != nil {
			return fmt.Sprintf("pod %s/%s: PodDisruptionBudget %s allows no eviction", p.Namespace, p.Name, b.Name)
		}
	}
	return ""
}

// protected reads a karpenter.sh/do-not-disrupt annotation with the one parser the webhook uses.
func protected(annotations map[string]string, created, now time.Time) bool {
	value, ok := annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return false
	}
	p, _, _ := policy.DoNotDisruptUntil(value, created, now)
	return p
}

// movable: the pod must be evicted for the node to go (not a DaemonSet, static or finished pod).
func movable(p *corev1.Pod) bool {
	return !podkind.IsFinished(p) && !podkind.IsMirror(p) && !podkind.IsDaemonSet(p)
}

// lastPodEvent tracks when the node's set of pods last changed: in memory between loops, from the
// claim's status.lastPodEventTime after a restart, and never earlier than InitializedSettle after
// the node initialized.
func (c *Controller) lastPodEvent(m *member, now time.Time) time.Time {
	uids := make([]string, 0, len(m.pods))
	for _, p := range m.pods {
		if movable(p) {
			uids = append(uids, string(p.UID))
		}
	}
	sort.Strings(uids)
	sig := strings.Join(uids, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	seen, ok := c.podSets[m.claim.Name]
	t := m.claim.Status.LastPodEventTime.Time
	switch {
	case ok && seen.sig != sig:
		t = now
	case ok:
		t = seen.at
	case t.IsZero():
		for _, p := range m.pods {
			if p.CreationTimestamp.After(t) {
				t = p.CreationTimestamp.Time
			}
		}
	}
	if init := m.claim.GetCondition(v1.ConditionTypeInitialized); init != nil {
		if settled := init.LastTransitionTime.Add(InitializedSettle); settled.After(t) {
			t = settled
		}
	}
	c.podSets[m.claim.Name] = podSet{sig: sig, at: t}
	return t
}

type podSet struct {
	sig string
	at  time.Time
}

// disruptionCost ranks nodes as upstream does: each pod costs 1 plus its pod-deletion-cost and
// priority scaled down, and a node closer to expiry is cheaper to disrupt.
func disruptionCost(m *member, now time.Time) float64 {
	cost := 0.0
	for _, p := range m.pods {
		if !movable(p) {
			continue
		}
		cost++
		if v, err := strconv.ParseFloat(p.Annotations["controller.kubernetes.io/pod-deletion-cost"], 64); err == nil {
			cost += math.Max(-1, math.Min(1, v/math.Exp2(27)))
		}
		if p.Spec.Priority != nil {
			cost += math.Max(-1, math.Min(1, float64(*p.Spec.Priority)/math.Exp2(25)))
		}
	}
	if ea := m.claim.Spec.ExpireAfter; !ea.IsNever() && *ea.Duration > 0 {
		left := m.claim.CreationTimestamp.Add(*ea.Duration).Sub(now)
		cost *= math.Max(0, math.Min(1, float64(left)/float64(*ea.Duration)))
	}
	return math.Max(cost, 0)
}

// podUIDs is the set of movable pods on the node.
func podUIDs(pods []*corev1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range pods {
		if movable(p) && p.DeletionTimestamp.IsZero() {
			out[p.UID] = true
		}
	}
	return out
}
