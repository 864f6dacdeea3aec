package disruptionpolicy

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// InitializedSettle is how long after a node initialized its pods are taken as settled: a node that
// just initialized may look empty only because its pods have not bound yet.
const InitializedSettle = 10 * time.Second

// Node is one node as the disruption methods judge it.
type Node struct {
	Node *corev1.Node
	// Claim is the node's NodeClaim; nil when unknown (a dump without NodeClaims).
	Claim *v1.NodeClaim
	Pool  *v1.NodePool
	// Pods are the pods bound to the node.
	Pods []*corev1.Pod
	// LastPodEvent is when a pod last landed on or left the node; zero when unknown (taken as long
	// ago).
	LastPodEvent time.Time
}

// SettledPodEvent is when consolidateAfter counts from: the node's LastPodEvent, but never earlier
// than InitializedSettle after its claim initialized. The clamp is not written anywhere: the
// claim's status.lastPodEventTime holds the real last pod event (the disruption loop), so the
// controller, a new leader and `simulate --consolidate` all apply it the same way.
func SettledPodEvent(n Node) time.Time {
	t := n.LastPodEvent
	if n.Claim != nil {
		if init := n.Claim.GetCondition(v1.ConditionTypeInitialized); init != nil && n.Claim.IsTrue(v1.ConditionTypeInitialized) {
			if settled := init.LastTransitionTime.Add(InitializedSettle); settled.After(t) {
				t = settled
			}
		}
	}
	return t
}

// Verdict is what the policy says about one node at a time.
type Verdict struct {
	// Unavailable says why no method may touch the node at all ("" when none): not initialized,
	// already being disrupted.
	Unavailable string
	// Protection keeps the node from voluntary disruption (nil when none).
	Protection *Protection
	// Consolidatable: consolidation may take the node (available, unprotected, consolidateAfter
	// passed); NotConsolidatable says why not otherwise.
	Consolidatable    bool
	NotConsolidatable string
	// Cost is the disruption cost the planner ranks nodes by.
	Cost float64
}

// Blocked is why no voluntary method may take the node now, or "".
func (v Verdict) Blocked() string {
	if v.Unavailable != "" {
		return v.Unavailable
	}
	return v.Protection.String()
}

// DriftBlocked is why drift may not replace the node now, or "". As in Karpenter v1, drift (an
// eventual disruption) proceeds past pod-level protections — a pod's do-not-disrupt annotation, a
// PodDisruptionBudget refusing an eviction — when the NodeClaim's terminationGracePeriod bounds the
// drain; a Node's or NodeClaim's own do-not-disrupt still blocks it.
func (v Verdict) DriftBlocked(claim *v1.NodeClaim) string {
	if v.Unavailable != "" {
		return v.Unavailable
	}
	if v.Protection == nil || (v.Protection.PodLevel && claim != nil && claim.Spec.TerminationGracePeriod != nil) {
		return ""
	}
	return v.Protection.String()
}

// Judge applies the policy to one node at now.
func Judge(n Node, pdbs PDBs, now time.Time) Verdict {
	v := Verdict{Cost: DisruptionCost(n.Pods, n.Claim, now)}
	switch {
	case n.Claim != nil && !n.Claim.IsTrue(v1.ConditionTypeInitialized):
		v.Unavailable = "the node is not initialized"
	case Disrupting(n.Claim, n.Node):
		v.Unavailable = "the node is already being disrupted"
	}
	v.Protection = Protect(n.Node, n.Claim, n.Pods, pdbs, now)
	switch {
	case v.Blocked() != "":
		v.NotConsolidatable = v.Blocked()
	case n.Pool == nil:
		v.NotConsolidatable = "not a node of a NodePool"
	case n.Pool.Spec.Disruption.ConsolidateAfter.Never:
		v.NotConsolidatable = fmt.Sprintf("NodePool %s has consolidateAfter: Never", n.Pool.Name)
	default:
		var after time.Duration // unset (a NodePool the apiserver did not default): the default 0s
		if d := n.Pool.Spec.Disruption.ConsolidateAfter.Duration; d != nil {
			after = *d
		}
		last := SettledPodEvent(n)
		switch since := now.Sub(last); {
		case last.IsZero() || since >= after:
			v.Consolidatable = true
		case !last.Equal(n.LastPodEvent):
			v.NotConsolidatable = fmt.Sprintf("it initialized less than %s ago (its pods may not have bound yet) plus NodePool %s's consolidateAfter (%s)",
				InitializedSettle, n.Pool.Name, after)
		default:
			v.NotConsolidatable = fmt.Sprintf("a pod landed on or left it %s ago, less than NodePool %s's consolidateAfter (%s)",
				since.Truncate(time.Second), n.Pool.Name, after)
		}
	}
	return v
}

// Disrupting reports whether the node is already being disrupted: its NodeClaim or Node is being
// deleted, the claim is marked Disrupting, or the Node carries the karpenter.sh/disrupted taint.
func Disrupting(claim *v1.NodeClaim, node *corev1.Node) bool {
	if claim != nil && (!claim.DeletionTimestamp.IsZero() || claim.IsTrue(v1.ConditionTypeDisrupting)) {
		return true
	}
	return node != nil && (!node.DeletionTimestamp.IsZero() || HasDisruptedTaint(node))
}

// HasDisruptedTaint reports whether the node carries karpenter.sh/disrupted:NoSchedule.
func HasDisruptedTaint(n *corev1.Node) bool {
	return HasTaint(n, v1.DisruptedNoScheduleTaint)
}

// DisruptionCost ranks nodes as upstream does: each pod that must move costs 1 plus its
// pod-deletion-cost and priority scaled down, and a node closer to expiry is cheaper to disrupt.
func DisruptionCost(pods []*corev1.Pod, claim *v1.NodeClaim, now time.Time) float64 {
	cost := 0.0
	for _, p := range pods {
		if !Movable(p) {
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
	if claim != nil {
		if ea := claim.Spec.ExpireAfter; !ea.IsNever() && *ea.Duration > 0 {
			left := claim.CreationTimestamp.Add(*ea.Duration).Sub(now)
			cost *= math.Max(0, math.Min(1, float64(left)/float64(*ea.Duration)))
		}
	}
	return math.Max(cost, 0)
}

// Expired reports whether the claim has lived past its expireAfter ("Never" never expires).
func Expired(nc *v1.NodeClaim, now time.Time) bool {
	ea := nc.Spec.ExpireAfter
	if ea.IsNever() {
		return false
	}
	return !now.Before(nc.CreationTimestamp.Add(*ea.Duration))
}
