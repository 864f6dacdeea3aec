package nomination

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// boundAhead is an apiserver reader that is ahead of the informer cache: it shows the pods bound to
// their nominated node while the cache still shows them pending.
type boundAhead struct{ client.Reader }

func (b boundAhead) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := b.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if pod, ok := obj.(*corev1.Pod); ok && pod.Status.NominatedNodeName != "" {
		pod.Spec.NodeName = pod.Status.NominatedNodeName
	}
	return nil
}

// releasedWithPlannedPod releases node-a with pod-a planned on it, with the given RejectionGrace and
// the controller's live reader wrapped by wrap; the pod stays pending. It returns the harness and the pod.
func releasedWithPlannedPod(t *testing.T, grace time.Duration, wrap func(client.Reader) client.Reader) (*harness, *corev1.Pod) {
	t.Helper()
	opts := nominating()
	opts.RejectionGrace = grace
	h := startWithReader(t, opts, true, wrap)
	h.claimWithNode(t, "node-a", "batch-1", false)
	pod := h.pendingPod(t, "pod-a", nil)
	h.ctrl.Plan("node-a", []*corev1.Pod{pod})
	h.setReady(t, "node-a", true)
	eventually(t, "pod nominated at release", 20*time.Second, func() (bool, string) {
		h.get(t, pod)
		return pod.Status.NominatedNodeName == "node-a" && h.store.IsReleased("node-a"), pod.Status.NominatedNodeName
	})
	return h, pod
}

// A planned pod the cache shows pending past RejectionGrace after its node's release, while the
// apiserver already has it bound (the informer lags under load), is not re-planned: the stall is
// confirmed with the apiserver first, and the pod counts as bound. Re-planned, it would buy a node
// a second time.
func TestStallTheCacheShowsLateDoesNotReplan(t *testing.T) {
	h, pod := releasedWithPlannedPod(t, 300*time.Millisecond, func(r client.Reader) client.Reader { return boundAhead{r} })
	eventually(t, "the pod found bound by the stall watch", 10*time.Second, func() (bool, string) {
		claim, planned := h.store.ClaimOf(pod.UID)
		return !planned, fmt.Sprintf("still planned on %q, %d re-plans", claim, h.replans.Load())
	})
	if n := h.replans.Load(); n != 0 {
		t.Errorf("%d re-plans for a pod the apiserver shows bound", n)
	}
}

// A planned pod the apiserver also shows pending past RejectionGrace after its node's release is
// handled as rejected and planned again.
func TestStallTheApiserverConfirmsIsReplanned(t *testing.T) {
	h, pod := releasedWithPlannedPod(t, 300*time.Millisecond, nil)
	eventually(t, "the stalled pod re-planned", 10*time.Second, func() (bool, string) {
		return h.replans.Load() > 0, fmt.Sprintf("%d re-plans", h.replans.Load())
	})
	if _, planned := h.store.ClaimOf(pod.UID); !planned {
		t.Error("the nomination was dropped before the sweep; only Sweep may drop it")
	}
}
