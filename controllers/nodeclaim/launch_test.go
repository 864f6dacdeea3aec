package nodeclaim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// deniedCloud refuses every launch with a terminal error, as the AWS provider does for
// UnauthorizedOperation, and counts the attempts.
type deniedCloud struct {
	cloudprovider.CloudProvider
	creates *int
}

func (d deniedCloud) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	*d.creates++
	return nil, reconcile.TerminalError(errors.New("the controller's IAM role is not allowed ec2:CreateFleet on arn:aws:ec2:us-west-2:1:network-interface/*"))
}

// A terminal launch error is recorded once (condition and event naming it), not retried on the
// next reconcile, and the claim is requeued for its launch timeout (when liveness deletes it).
func TestTerminalLaunchErrorIsNotRetriedAndTheClaimTimesOut(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "denied", Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}}
	kube := newClient(nc)
	clk := clocktesting.NewFakeClock(now)
	recorder := events.NewFakeRecorder(10)
	creates := 0
	c := nodeclaim.New(kube, deniedCloud{creates: &creates}, nil, recorder, clk, nodeclaim.DefaultOptions())
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	for range 3 {
		res, err := c.Reconcile(ctx, req)
		if timeout := nodeclaim.DefaultOptions().LaunchTimeout; err != nil || res.RequeueAfter <= timeout-time.Minute || res.RequeueAfter > timeout {
			t.Fatalf("Reconcile = %+v, %v; want no error and a requeue at the launch timeout (%s), when liveness deletes the claim", res, err, timeout)
		}
	}
	if creates != 1 {
		t.Errorf("Create called %d times, want 1", creates)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if l := got.GetCondition(v1.ConditionTypeLaunched); l == nil || l.Reason != "CannotLaunch" || !strings.Contains(l.Message, "ec2:CreateFleet on") {
		t.Errorf("Launched = %+v, want False/CannotLaunch naming the permission", l)
	}
	if e := <-recorder.Events; !strings.Contains(e, "LaunchFailed") || !strings.Contains(e, "ec2:CreateFleet on") {
		t.Errorf("event %q, want LaunchFailed naming the permission", e)
	}
}

// countingCloud launches every claim as the same instance and counts the calls.
type countingCloud struct {
	cloudprovider.CloudProvider
	creates *int
}

func (c countingCloud) Create(_ context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	*c.creates++
	out := nc.DeepCopy()
	out.Status.ProviderID = "aws:///us-west-2a/i-0123"
	return out, nil
}

// staleStatus drops status writes, as a cache that has not caught up with them reads.
type staleStatus struct{ client.Client }

func (s staleStatus) Status() client.SubResourceWriter { return droppedStatus{s.Client.Status()} }

type droppedStatus struct{ client.SubResourceWriter }

func (droppedStatus) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return nil
}

// A second reconcile that reads the claim before its Launched status (the first reconcile's
// metadata patch wakes it while the cache lags) returns the instance already launched instead of
// calling the cloud again: the AWS stack saw two CreateFleet calls for one claim.
func TestSecondReconcileOfAStaleClaimDoesNotLaunchAgain(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app", UID: "uid-app", Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}}
	kube := staleStatus{newClient(nc)}
	creates := 0
	c := nodeclaim.New(kube, countingCloud{creates: &creates}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(now), nodeclaim.DefaultOptions())
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	for range 2 {
		if _, err := c.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if creates != 1 {
		t.Errorf("Create called %d times for one claim, want 1", creates)
	}
}

// Launched events are rate-limited as the provisioner's Nominated events are (burst 10, then 5/s):
// one per claim was 1,000 event writes per 1,000 launches in make bench-scale. Every claim still
// gets its Launched condition.
func TestLaunchedEventsAreRateLimited(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	var objs []client.Object
	for i := range 30 {
		name := fmt.Sprintf("default-%02d", i)
		objs = append(objs, &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}})
	}
	kube := newClient(objs...)
	recorder := events.NewFakeRecorder(100)
	c := nodeclaim.New(unseenNodes{kube}, nodeCreatingCloud{kube: kube}, nil, recorder, clocktesting.NewFakeClock(now), nodeclaim.DefaultOptions())
	c.SetLive(kube)
	for _, o := range objs {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}}); err != nil {
			t.Fatal(err)
		}
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil || !got.IsTrue(v1.ConditionTypeLaunched) {
			t.Fatalf("claim %s not Launched (err %v)", o.GetName(), err)
		}
	}
	launched := 0
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.Contains(e, "Launched") {
			launched++
		}
	}
	if launched != 10 {
		t.Errorf("%d Launched events for 30 launches in the same instant, want the burst of 10", launched)
	}
}

// launchClaim is a claim the provisioner just created, not launched yet.
func launchClaim(name string) *v1.NodeClaim {
	return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(time.Now())}}
}

// A launch writes the claim's metadata (the instance's labels) and its status (Launched,
// Registered) in two patches sent together, not one round trip after the other: the metadata
// patch here waits for the status patch to start.
func TestLaunchPatchesMetadataAndStatusTogether(t *testing.T) {
	ctx := context.Background()
	nc := launchClaim("default-par")
	statusStarted := make(chan struct{})
	var overlapped bool
	kube := interceptor.NewClient(newClient(nc).(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok {
				select {
				case <-statusStarted:
					overlapped = true
				case <-time.After(time.Second):
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if obj.GetName() == nc.Name {
				close(statusStarted)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	c := nodeclaim.New(unseenNodes{kube}, nodeCreatingCloud{kube: kube}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	c.SetLive(kube)
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] != "m5.large" || !got.IsTrue(v1.ConditionTypeRegistered) {
		t.Fatalf("claim labels %v, registered %v: want the instance's labels and Registered", got.Labels, got.IsTrue(v1.ConditionTypeRegistered))
	}
	if !overlapped {
		t.Error("the metadata patch finished before the status patch started: two round trips one after the other")
	}
}

// When the launch's metadata patch fails and its status patch does not, the next reconcile writes
// the instance's labels from the launch it remembers, though the claim is already Launched.
func TestLaunchLabelsSurviveAFailedMetadataPatch(t *testing.T) {
	ctx := context.Background()
	nc := launchClaim("default-fail")
	failed := false
	kube := interceptor.NewClient(newClient(nc).(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*v1.NodeClaim); ok && !failed {
				failed = true
				return errors.New("injected: the apiserver timed out")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	c := nodeclaim.New(unseenNodes{kube}, nodeCreatingCloud{kube: kube}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	c.SetLive(kube)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	if _, err := c.Reconcile(ctx, req); err == nil {
		t.Fatal("the first reconcile hid the failed metadata patch")
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(v1.ConditionTypeLaunched) {
		t.Fatalf("status patch not written alongside the failed metadata patch (Launched %v)", got.GetCondition(v1.ConditionTypeLaunched))
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.LabelInstanceType] != "m5.large" {
		t.Errorf("claim labels %v after the retry, want the instance's labels (node.kubernetes.io/instance-type=m5.large)", got.Labels)
	}
}
