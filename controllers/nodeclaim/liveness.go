package nodeclaim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// liveness deletes claims that never launched or never registered within their timeouts; their pods
// go back to provisioning.
func (c *Controller) liveness(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if nc.IsTrue(v1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	since, timeout, what := nc.CreationTimestamp.Time, c.opts.LaunchTimeout, "launch"
	if launched := nc.GetCondition(v1.ConditionTypeLaunched); launched != nil && launched.Status == metav1.ConditionTrue {
		since, timeout, what = launched.LastTransitionTime.Time, c.opts.RegistrationTimeout, "register"
	}
	left := since.Add(timeout).Sub(c.clock.Now())
	if left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	msg := fmt.Sprintf("NodeClaim %s did not %s within %s; deleting it", nc.Name, what, timeout)
	log.FromContext(ctx).Info(msg, "nodeclaim", nc.Name)
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, "LivenessTimeout", "Liveness", msg)
	if err := c.kube.Delete(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
	}
	nc.DeletionTimestamp = &metav1.Time{Time: c.clock.Now()}
	return reconcile.Result{}, nil
}

// finalize runs when the claim is deleted: delete its Node (whose own termination drains it), then
// terminate the instance, then release the claim.
func (c *Controller) finalize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	// Deleted before it registered: nothing reads its launch again.
	c.launched.Delete(nc.UID)
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	node, err := c.nodeFor(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node != nil {
		if node.DeletionTimestamp.IsZero() {
			if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting node %s of nodeclaim %s: %w", node.Name, nc.Name, err)
			}
		}
		// The Node's deletion event requeues the claim; the timer is a safety net.
		return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
	}
	if err := c.cloud.Delete(ctx, nc); err == nil {
		// Still terminating: come back until the provider says it is gone.
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	} else if !isNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("terminating instance of nodeclaim %s: %w", nc.Name, err)
	}
	stored := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	if err := c.kube.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer from nodeclaim %s: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}

func isNotFound(err error) bool { return cloudprovider.IsNodeClaimNotFoundError(err) }
