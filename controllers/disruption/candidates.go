package disruption

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
)

// InitializedSettle is how long after a node initialized its pods are taken as settled: a node that
// just initialized may look empty only because its pods have not bound yet.
const InitializedSettle = disruptionpolicy.InitializedSettle

// member is one Joist node as the disruption methods see it.
type member struct {
	claim *v1.NodeClaim
	node  *corev1.Node
	pool  *v1.NodePool
	pods  []*corev1.Pod
	// verdict is the disruption policy's judgement of the node now.
	verdict disruptionpolicy.Verdict
	// blocked says why no voluntary method may touch the node ("" when none).
	blocked string
	// lastPodEvent is when a pod last landed on or left the node, as observed (not clamped to the
	// settle after it initialized: the policy does that).
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
		m.verdict = disruptionpolicy.Judge(m.policyNode(), cl.pdbs, now)
		m.blocked = m.verdict.Blocked()
		m.consolidatable = m.verdict.Consolidatable
		m.cost = m.verdict.Cost
		if c := nc.GetCondition(v1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
			m.driftReason = c.Reason // updateStatus recomputes it; decide reads what was written
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].node.Name < out[j].node.Name })
	return out
}

func (m *member) policyNode() disruptionpolicy.Node {
	return disruptionpolicy.Node{Node: m.node, Claim: m.claim, Pool: m.pool, Pods: m.pods, LastPodEvent: m.lastPodEvent}
}

// movable: the pod must be evicted and find a new home for the node to go.
func movable(p *corev1.Pod) bool { return disruptionpolicy.Movable(p) }

// lastPodEvent tracks when the node's set of pods last changed: in memory between loops, from the
// claim's status.lastPodEventTime after a restart (or its pods' creation when none was written).
// The real time: the policy counts consolidateAfter from InitializedSettle after the node
// initialized at the earliest (disruptionpolicy.SettledPodEvent).
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
	c.podSets[m.claim.Name] = podSet{sig: sig, at: t}
	return t
}

type podSet struct {
	sig string
	at  time.Time
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
