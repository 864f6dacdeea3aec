package nodeclaim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
)

// launch creates the instance (Create adopts one already launched for this claim, so a crash between
// launch and status write does not launch twice) and records what was launched.
func (c *Controller) launch(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if l := nc.GetCondition(v1.ConditionTypeLaunched); l != nil && (l.Status == metav1.ConditionTrue || l.Reason == reasonCannotLaunch) {
		if prev, ok := c.launched.Get(nc.UID); ok && l.Status == metav1.ConditionTrue {
			if rec := prev.(*v1.NodeClaim); nc.IsTrue(v1.ConditionTypeRegistered) && hasLaunchMetadata(nc, rec) {
				// The claim as read shows all the record carried (Launched, the instance's labels
				// and annotations; Registered, so register no longer asks for the launch's Node):
				// forget it now. apimachinery's Expiring drops an expired entry only on a later
				// Set, so after a launch burst every record stayed until the next launch (~2 MB
				// of live heap at 1,000 claims in make bench-scale's settle window).
				c.launched.Delete(nc.UID)
			} else {
				// The launch's metadata patch may have failed where its status patch did not
				// (persist sends both at once): its labels and annotations again.
				withLaunchMetadata(nc, rec)
			}
		}
		return reconcile.Result{}, nil
	}
	launched, err := c.create(ctx, nc)
	if err != nil {
		var ice *cloudprovider.InsufficientCapacityError
		if errors.As(err, &ice) {
			// Mark the offerings that failed and delete the claim: its pods return to
			// provisioning, which now sees the offerings as unavailable and picks the next-cheapest.
			if c.unavailable != nil {
				for _, o := range ice.Offerings {
					c.unavailable.MarkUnavailable(o)
				}
			}
			c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, "InsufficientCapacityError", "Launch",
				"NodeClaim %s could not launch: %s", nc.Name, err.Error())
			log.FromContext(ctx).Info("deleting nodeclaim: insufficient capacity", "nodeclaim", nc.Name, "error", err.Error())
			if err := c.kube.Delete(ctx, nc); err != nil {
				return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s after insufficient capacity: %w", nc.Name, err)
			}
			nc.DeletionTimestamp = &metav1.Time{Time: c.clock.Now()}
			return reconcile.Result{}, nil
		}
		if errors.Is(err, reconcile.TerminalError(nil)) {
			// Retrying cannot help (e.g. the cloud refused for lack of permission): say so once and
			// let liveness delete the claim at its launch timeout, instead of calling the cloud again.
			nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionFalse, reasonCannotLaunch, truncate(err.Error()))
			c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, "LaunchFailed", "Launch", "NodeClaim %s cannot launch: %s", nc.Name, truncate(err.Error()))
			log.FromContext(ctx).Info("nodeclaim cannot launch; not retrying", "nodeclaim", nc.Name, "error", err.Error())
			return reconcile.Result{}, nil
		}
		nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionFalse, "LaunchFailed", truncate(err.Error()))
		return reconcile.Result{}, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
	}
	withLaunchMetadata(nc, launched)
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.ImageID = launched.Status.ImageID
	nc.Status.Capacity = launched.Status.Capacity
	nc.Status.Allocatable = launched.Status.Allocatable
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	if c.launchedEvents.TryAccept() {
		c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "Launched", "Launch", "Launched %s (%s, %s, %s)",
			nc.Status.ProviderID, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey])
	}
	return reconcile.Result{}, nil
}

// hasLaunchMetadata reports whether nc carries every label and annotation of the launch.
func hasLaunchMetadata(nc, launched *v1.NodeClaim) bool {
	for k, v := range launched.Labels {
		if got, ok := nc.Labels[k]; !ok || got != v {
			return false
		}
	}
	for k, v := range launched.Annotations {
		if got, ok := nc.Annotations[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// withLaunchMetadata copies the launched instance's labels and annotations (e.g. the NodeClass hash
// drift is measured against) onto the claim.
func withLaunchMetadata(nc, launched *v1.NodeClaim) {
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range launched.Labels {
		nc.Labels[k] = v
	}
	for k, v := range launched.Annotations {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[k] = v
	}
}

// launchMemory is how long a launch result is remembered: long enough for the cache to show the
// Launched status the same reconcile wrote (Karpenter's launch cache keeps a minute too).
const launchMemory = time.Minute

// create launches nc's instance, or returns the instance an earlier reconcile of the same claim
// launched. Create adopting an instance already launched for the claim covers a restart, but not a
// second reconcile reading a stale claim right after the first: the provider may not see its own
// launch yet (EC2's eventual consistency) and call CreateFleet again.
func (c *Controller) create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	if prev, ok := c.launched.Get(nc.UID); ok {
		return prev.(*v1.NodeClaim).DeepCopy(), nil
	}
	launched, err := c.cloud.Create(ctx, nc)
	if err != nil {
		return nil, err
	}
	c.launched.Set(nc.UID, launchRecord(launched), launchMemory)
	return launched, nil
}

// launchRecord is what the lifecycle remembers of a launch result: what the reconciles after it
// read (the instance's labels and annotations, its provider ID, image, capacity, allocatable and
// node name), not a copy of the whole claim (its spec's requirements and resources, its other
// metadata).
func launchRecord(launched *v1.NodeClaim) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(launched.Labels), Annotations: maps.Clone(launched.Annotations)},
		Status: v1.NodeClaimStatus{
			ProviderID: launched.Status.ProviderID, ImageID: launched.Status.ImageID, NodeName: launched.Status.NodeName,
			Capacity: launched.Status.Capacity.DeepCopy(), Allocatable: launched.Status.Allocatable.DeepCopy(),
		},
	}
}

// reasonCannotLaunch marks a claim whose launch failed with a terminal error: it is not retried.
const reasonCannotLaunch = "CannotLaunch"

func truncate(s string) string {
	const max = 1000
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
