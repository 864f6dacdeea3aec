package termination

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/podkind"
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

// drain evicts the node's pods wave by wave. A pod whose own grace period would no longer fit before
// the deadline is deleted whatever its wave, PodDisruptionBudget or do-not-disrupt annotation
// (mustDelete), so it still gets that grace period. It returns how many pods still hold the node
// and whether an eviction was refused.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, nc *v1.NodeClaim, deadline *time.Time) (remaining int, refused bool, err error) {
	pods, err := c.podsOn(ctx, node.Name)
	if err != nil {
		return 0, false, err
	}
	now := c.clock.Now()
	forced := deadline != nil && !now.Before(*deadline)
	var waves [4][]*corev1.Pod
	for _, pod := range pods {
		if !disruptionpolicy.Evicted(pod) {
			continue
		}
		if !pod.DeletionTimestamp.IsZero() && now.After(pod.DeletionTimestamp.Add(stuckAfter)) && !forced {
			continue // stuck terminating: does not hold the node
		}
		remaining++
		if mustDelete(pod, deadline, now) {
			if err := c.deleteBy(ctx, pod, *deadline, now); err != nil {
				return 0, false, err
			}
			continue
		}
		waves[wave(pod)] = append(waves[wave(pod)], pod)
	}
	for w, group := range waves {
		if len(group) == 0 {
			continue
		}
		var fixed, moved []*corev1.Pod
		for _, pod := range group {
			if !pod.DeletionTimestamp.IsZero() {
				continue
			}
			if on, _ := disruptionpolicy.DoNotDisrupt(pod, now); on {
				continue // waits for the pod to finish, or for the deadline (terminationGracePeriod)
			}
			if disruptionpolicy.Movable(pod) {
				moved = append(moved, pod)
			} else {
				fixed = append(fixed, pod)
			}
		}
		if len(moved) > 0 {
			if moved, err = c.largestFirst(ctx, node, nc, pods, moved, w, now); err != nil {
				return 0, false, err
			}
		}
		r, err := c.evictAll(ctx, node, append(fixed, moved...))
		if err != nil {
			return 0, false, err
		}
		return remaining, refused || r, nil // later waves wait for this one
	}
	return remaining, refused, nil
}

// mustDelete reports whether the pod has to be deleted now to end before the deadline: the
// deadline passed, or it is closer than the pod's terminationGracePeriodSeconds (an already
// terminating pod: its deletionTimestamp, which includes its grace period, lies past the deadline).
func mustDelete(pod *corev1.Pod, deadline *time.Time, now time.Time) bool {
	if deadline == nil {
		return false
	}
	if !now.Before(*deadline) {
		return true
	}
	if !pod.DeletionTimestamp.IsZero() {
		return pod.DeletionTimestamp.After(*deadline)
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	return !now.Before(deadline.Add(-time.Duration(grace) * time.Second))
}

// evictAll evicts the pods, up to MaxConcurrentEvictions at a time, as Karpenter's eviction queue
// does (concurrent reconciles): one after the other, each eviction's round trip (~100 ms on a busy
// apiserver: the PDB check, the DisruptionTarget condition, the delete) made a 40-pod node's drain
// take 4 s of the 10 s a consolidation command has (issue #20's time target; session 18's bench
// logs). The apiserver still decides each eviction against the PodDisruptionBudgets, whose status
// it updates with optimistic concurrency, so concurrent evictions cannot take more than a budget
// allows. Every pod is tried; it reports whether one was refused, and every error.
func (c *Controller) evictAll(ctx context.Context, node *corev1.Node, pods []*corev1.Pod) (bool, error) {
	var g errgroup.Group
	g.SetLimit(max(1, c.opts.MaxConcurrentEvictions))
	var refused atomic.Bool
	errs := make([]error, len(pods))
	for i, pod := range pods {
		g.Go(func() error {
			r, err := c.evict(ctx, node, pod)
			if r {
				refused.Store(true)
			}
			errs[i] = err
			return nil
		})
	}
	_ = g.Wait() // the evictions' errors are in errs
	return refused.Load(), errors.Join(errs...)
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

// deleteBy deletes a pod so that it ends by the deadline: with its own grace period when that still
// fits, else with what is left of it (0 past the deadline). A terminating pod is deleted again only
// to shorten its grace period.
func (c *Controller) deleteBy(ctx context.Context, pod *corev1.Pod, deadline, now time.Time) error {
	left := int64(deadline.Sub(now) / time.Second)
	if left < 0 {
		left = 0
	}
	var opts []client.DeleteOption
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if !pod.DeletionTimestamp.IsZero() || grace > left {
		opts = append(opts, client.GracePeriodSeconds(left))
	}
	if err := c.kube.Delete(ctx, pod, opts...); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pod %s before the node's termination deadline: %w", client.ObjectKeyFromObject(pod), err)
	}
	c.recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Disrupted", "Drain",
		"Deleted pod: node %s must be gone by %s (terminationGracePeriod)", pod.Spec.NodeName, deadline.UTC().Format(time.RFC3339))
	return nil
}

// volumesAttached counts the VolumeAttachments still on the node that the drain waits for; the
// instance is terminated only once they detached (or the deadline passed), so volumes are not torn
// off a running instance. Volumes of pods that stay on the node (mirror pods, pods tolerating the
// disrupted taint: the drain does not evict them) are not waited for, as in Karpenter: they detach
// only when the instance goes.
func (c *Controller) volumesAttached(ctx context.Context, node *corev1.Node, deadline *time.Time) (int, error) {
	if deadline != nil && !c.clock.Now().Before(*deadline) {
		return 0, nil
	}
	vas := &storagev1.VolumeAttachmentList{}
	if err := c.kube.List(ctx, vas); err != nil {
		return 0, fmt.Errorf("listing volumeattachments: %w", err)
	}
	var attached []*storagev1.VolumeAttachment
	for i := range vas.Items {
		if va := &vas.Items[i]; va.Spec.NodeName == node.Name && va.Status.Attached {
			attached = append(attached, va)
		}
	}
	if len(attached) == 0 {
		return 0, nil
	}
	staying, err := c.stayingVolumes(ctx, node)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, va := range attached {
		if pv := va.Spec.Source.PersistentVolumeName; pv == nil || !staying[*pv] {
			n++
		}
	}
	return n, nil
}

// stayingVolumes are the PersistentVolumes the node's pods that the drain leaves in place claim.
func (c *Controller) stayingVolumes(ctx context.Context, node *corev1.Node) (map[string]bool, error) {
	pods := &corev1.PodList{}
	if err := c.kube.List(ctx, pods, client.MatchingFields{indexes.PodNodeName: node.Name}); err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", node.Name, err)
	}
	out := map[string]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if disruptionpolicy.Evicted(pod) || podkind.IsFinished(pod) {
			continue
		}
		for _, vol := range pod.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			err := c.kube.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: vol.PersistentVolumeClaim.ClaimName}, pvc)
			if err != nil {
				if client.IgnoreNotFound(err) == nil {
					continue
				}
				return nil, fmt.Errorf("getting claim %s/%s of pod %s: %w", pod.Namespace, vol.PersistentVolumeClaim.ClaimName, pod.Name, err)
			}
			if pvc.Spec.VolumeName != "" {
				out[pvc.Spec.VolumeName] = true
			}
		}
	}
	return out, nil
}
