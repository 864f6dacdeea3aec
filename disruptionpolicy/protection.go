package disruptionpolicy

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/policy"
)

// Kinds of objects that protect a node.
const (
	KindNode                = "Node"
	KindNodeClaim           = "NodeClaim"
	KindPod                 = "Pod"
	KindPodDisruptionBudget = "PodDisruptionBudget"
)

// Protection is the one object that keeps a node from voluntary disruption now, and why.
type Protection struct {
	// Kind, Namespace and Name name the object: the Node, NodeClaim or Pod carrying
	// karpenter.sh/do-not-disrupt, or the PodDisruptionBudget refusing an eviction.
	Kind, Namespace, Name string
	// Pod is the namespace/name of the pod a PodDisruptionBudget protects.
	Pod string
	// PodLevel: the protection comes from a pod (its do-not-disrupt annotation or its PDB). Methods
	// whose drain terminationGracePeriod bounds (drift, as in Karpenter v1) proceed past it.
	PodLevel bool
	// Until is when a do-not-disrupt duration runs out (zero: "true", no end).
	Until   time.Time
	Message string
}

func (p *Protection) String() string {
	if p == nil {
		return ""
	}
	return p.Message
}

// DoNotDisrupt reports whether obj's karpenter.sh/do-not-disrupt annotation protects it at now
// ("true", or a duration counted from the object's creation that has not run out), with the one
// parser the webhook uses, and until when (zero when for ever).
func DoNotDisrupt(obj metav1.Object, now time.Time) (protected bool, until time.Time) {
	value, ok := obj.GetAnnotations()[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return false, time.Time{}
	}
	p, _, until := policy.DoNotDisruptUntil(value, obj.GetCreationTimestamp().Time, now)
	return p, until
}

func doNotDisruptProtection(kind string, obj metav1.Object, now time.Time) *Protection {
	on, until := DoNotDisrupt(obj, now)
	if !on {
		return nil
	}
	name := obj.GetName()
	if obj.GetNamespace() != "" {
		name = obj.GetNamespace() + "/" + name
	}
	msg := fmt.Sprintf("%s %s has %s", lowerKind(kind), name, v1.DoNotDisruptAnnotationKey)
	if !until.IsZero() {
		msg += " until " + until.UTC().Format(time.RFC3339)
	}
	return &Protection{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), PodLevel: kind == KindPod, Until: until, Message: msg}
}

func lowerKind(kind string) string {
	switch kind {
	case KindNode:
		return "node"
	case KindNodeClaim:
		return "nodeclaim"
	}
	return "pod"
}

// Evicted reports whether termination evicts the pod before the node goes: not finished, not a
// mirror (static) pod, not tolerating the karpenter.sh/disrupted taint (it would only come back).
// DaemonSet pods are evicted too, in the later waves.
func Evicted(pod *corev1.Pod) bool {
	if podFinished(pod) || podkind.IsMirror(pod) {
		return false
	}
	for _, t := range pod.Spec.Tolerations {
		if toleratesDisrupted(t) {
			return false
		}
	}
	return true
}

// Movable reports whether the pod needs a new home when its node goes: evicted and not a
// DaemonSet's (a DaemonSet runs its pod on the other nodes already).
func Movable(pod *corev1.Pod) bool {
	return Evicted(pod) && !podkind.IsDaemonSet(pod)
}

func podFinished(pod *corev1.Pod) bool { return podkind.IsFinished(pod) }

// Protect returns what protects the node from voluntary disruption at now, or nil: the Node's or
// NodeClaim's do-not-disrupt annotation, then, pod by pod (in the order given), a running pod's
// do-not-disrupt annotation or a PodDisruptionBudget that refuses its eviction. claim may be nil
// (a dump without NodeClaims).
func Protect(node *corev1.Node, claim *v1.NodeClaim, pods []*corev1.Pod, pdbs PDBs, now time.Time) *Protection {
	if node != nil {
		if p := doNotDisruptProtection(KindNode, node, now); p != nil {
			return p
		}
	}
	if claim != nil {
		if p := doNotDisruptProtection(KindNodeClaim, claim, now); p != nil {
			return p
		}
	}
	for _, pod := range pods {
		if !pod.DeletionTimestamp.IsZero() || podFinished(pod) {
			continue
		}
		if p := doNotDisruptProtection(KindPod, pod, now); p != nil {
			return p
		}
		if !Evicted(pod) {
			continue
		}
		if p := pdbs.EvictionBlocked(pod); p != nil {
			return p
		}
	}
	return nil
}

// toleratesDisrupted reports whether t tolerates karpenter.sh/disrupted:NoSchedule.
func toleratesDisrupted(t corev1.Toleration) bool {
	taint := v1.DisruptedNoScheduleTaint
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key == "" {
		return t.Operator == corev1.TolerationOpExists
	}
	return t.Key == taint.Key && (t.Operator == corev1.TolerationOpExists || t.Value == taint.Value)
}
