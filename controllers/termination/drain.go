package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/policy"
)

// stuckAfter: a pod still terminating this long past its deletionTimestamp (which already includes
// its grace period) is taken as gone: its kubelet is not going to finish it.
const stuckAfter = time.Minute

// wave is the eviction order: a wave starts only once the pods of the earlier ones are gone, so
// critical pods and DaemonSets (logging, networking) outlive the workloads that need them.
func wave(p *corev1.Pod) int {
	w := 0
	if podkind.IsDaemonSet(p) {
		w = 1
	}
	if p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical" {
		w += 2
	}
	return w
}

// drain evicts the node's pods wave by wave (past the deadline it deletes them). It returns how
// many pods still hold the node and whether an eviction was refused.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, deadline *time.Time) (remaining int, refused bool, err error) {
	pods := &corev1.PodList{}
	if err := c.kube.List(ctx, pods, client.MatchingFields{indexes.PodNodeName: node.Name}); err != nil {
		return 0, false, fmt.Errorf("listing pods on node %s: %w", node.Name, err)
	}
	now := c.clock.Now()
	forced := deadline != nil && !now.Before(*deadline)
	var waves [4][]*corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !drainable(pod) {
			continue
		}
		if !pod.DeletionTimestamp.IsZero() && now.After(pod.DeletionTimestamp.Add(stuckAfter)) && !forced {
			continue // stuck terminating: does not hold the node
		}
		waves[wave(pod)] = append(waves[wave(pod)], pod)
	}
	for w, group := range waves {
		if len(group) == 0 {
			continue
		}
		remaining = 0
		for _, g := range waves[w:] {
			remaining += len(g)
		}
		for _, pod := range group {
			switch {
			case forced:
				if err := c.forceDelete(ctx, pod); err != nil {
					return 0, false, err
				}
			case !pod.DeletionTimestamp.IsZero():
			case doNotDisrupt(pod, now):
				// Waits for the pod to finish, or for the deadline (terminationGracePeriod).
			default:
				r, err := c.evict(ctx, node, pod)
				if err != nil {
					return 0, false, err
				}
				refused = refused || r
			}
		}
		if !forced {
			return remaining, refused, nil // later waves wait for this one
		}
	}
	return remaining, refused, nil
}

func (c *Controller) evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod) (refused bool, err error) {
	err = c.kube.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
	})
	switch {
	case err == nil:
		c.recorder.Eventf(pod, node, corev1.EventTypeNormal, "Evicted", "Drain", "Evicted pod: node %s is draining", node.Name)
		return false, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsTooManyRequests(err):
		c.recorder.Eventf(node, pod, corev1.EventTypeWarning, "FailedDraining", "Drain",
			"Failed to evict pod %s/%s: a PodDisruptionBudget does not allow it now (retrying)", pod.Namespace, pod.Name)
		return true, nil
	}
	return false, fmt.Errorf("evicting pod %s: %w", client.ObjectKeyFromObject(pod), err)
}

// forceDelete deletes a pod past the termination grace period; one already terminating is deleted
// again without grace, so a stuck pod does not hold the node forever.
func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod) error {
	var opts []client.DeleteOption
	if !pod.DeletionTimestamp.IsZero() {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	if err := c.kube.Delete(ctx, pod, opts...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pod %s past the termination grace period: %w", client.ObjectKeyFromObject(pod), err)
	}
	return nil
}

// doNotDisrupt: the pod carries karpenter.sh/do-not-disrupt ("true" or an unexpired duration); it is
// not evicted, only deleted once the terminationGracePeriod runs out.
func doNotDisrupt(pod *corev1.Pod, now time.Time) bool {
	value, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]
	if !ok {
		return false
	}
	protected, _, _ := policy.DoNotDisruptUntil(value, pod.CreationTimestamp.Time, now)
	return protected
}

// volumesAttached counts the VolumeAttachments still on the node; the instance is terminated only
// once they detached (or the deadline passed), so volumes are not torn off a running instance.
func (c *Controller) volumesAttached(ctx context.Context, node *corev1.Node, deadline *time.Time) (int, error) {
	if deadline != nil && !c.clock.Now().Before(*deadline) {
		return 0, nil
	}
	vas := &storagev1.VolumeAttachmentList{}
	if err := c.kube.List(ctx, vas); err != nil {
		return 0, fmt.Errorf("listing volumeattachments: %w", err)
	}
	n := 0
	for _, va := range vas.Items {
		if va.Spec.NodeName == node.Name && va.Status.Attached {
			n++
		}
	}
	return n, nil
}

// drainable reports whether the pod must leave before the node goes: mirror (static) pods,
// finished pods and pods that tolerate the disrupted taint (they would only come back) stay.
// DaemonSet pods leave in the later waves.
func drainable(pod *corev1.Pod) bool {
	if podkind.IsFinished(pod) || podkind.IsMirror(pod) {
		return false
	}
	for _, t := range pod.Spec.Tolerations {
		if tolerates(t, v1.DisruptedNoScheduleTaint) {
			return false
		}
	}
	return true
}

func tolerates(t corev1.Toleration, taint corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key == "" {
		return t.Operator == corev1.TolerationOpExists
	}
	if t.Key != taint.Key {
		return false
	}
	return t.Operator == corev1.TolerationOpExists || t.Value == taint.Value
}
