package termination

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/test/env"
)

// A drain that waits on its evicted pod finishes as soon as the pod is gone, not at the next
// DrainPoll: the pod's deletion wakes it. The poll here is an hour, so without the wake-up the node
// stays.
func TestPodGoneWakesTheDrain(t *testing.T) {
	e := env.New(t, env.Options{})
	kube := e.Client
	node, _ := deletingNode(t, kube, "node-a", nil)
	pod := runningPod("app", "node-a", 30, nil)
	mustCreate(t, kube, pod)
	e.StartTestManager(t, func(mgr ctrl.Manager) error {
		c := New(mgr.GetClient(), &recordingCloud{}, events.NewFakeRecorder(100), clock.RealClock{}, Options{EvictionRetry: time.Hour, DrainPoll: time.Hour})
		return c.Register(mgr)
	})
	ctx := t.Context()

	poll := func(what string, cond func() (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond() }); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll("pod evicted", func() (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		return err == nil && !pod.DeletionTimestamp.IsZero(), client.IgnoreNotFound(err)
	})
	// The kubelet ends the pod.
	if err := kube.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	poll("node released after its last pod went (woken by the pod's deletion, not the hour-long poll)", func() (bool, error) {
		err := kube.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
