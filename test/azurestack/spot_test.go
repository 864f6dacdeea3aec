package azurestack

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
)

// TestSpotEvictionDeletesTheClaim: Azure evicts the spot VM (eviction policy Delete: the VM, its
// NIC and its disk go); its kubelet stops, so the node lifecycle controller (played by the test)
// marks the Node Ready=Unknown. As in the AKS provider, which has no eviction signal of its own
// (Scheduled Events are read in the VM, by a node agent), Joist learns it from the VM's absence:
// garbage collection deletes the claim within its sweep period, and the claim's termination removes
// the Node without trying to delete the VM again.
func TestSpotEvictionDeletesTheClaim(t *testing.T) {
	s, ctx := startedStack(t, 7*time.Minute)
	pod := s.pendingPod(ctx, "app")
	claim := s.launchedClaim(ctx, 90*time.Second)
	vm := s.assertOneVM(claim)
	if claim.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot || vm.Properties.Priority == nil || string(*vm.Properties.Priority) != "Spot" {
		t.Fatalf("launched %s with priority %v, want spot (the cheapest the pool allows)", claim.Labels[v1.CapacityTypeLabelKey], vm.Properties.Priority)
	}
	kubeletCtx, stopKubelet := context.WithCancel(ctx)
	node := s.registerAndScheduleWith(kubeletCtx, ctx, claim, pod)

	if err := s.arm.EvictSpot(*vm.Name); err != nil {
		t.Fatal(err)
	}
	evicted := time.Now()
	stopKubelet()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := &corev1.Node{}
		if err := s.kube.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
			return err
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
				n.Status.Conditions[i].LastTransitionTime = metav1.Now()
			}
		}
		return s.kube.Status().Update(ctx, n)
	}); err != nil {
		t.Fatal(err)
	}
	// Garbage collection sweeps every 30 s and spares claims younger than 30 s.
	eventually(ctx, t, "the evicted VM's claim deleted", 120*time.Second, func() (bool, string) {
		nc := &v1.NodeClaim{}
		err := s.kube.Get(ctx, client.ObjectKeyFromObject(claim), nc)
		return apierrors.IsNotFound(err) || (err == nil && !nc.DeletionTimestamp.IsZero()), fmt.Sprintf("claim %v", err)
	})
	t.Logf("claim deleted %s after the eviction", time.Since(evicted).Round(time.Second))
	// The node's drain waits out its pod (no kubelet finishes it) before the node goes.
	eventually(ctx, t, "the evicted VM's claim and node gone", 240*time.Second, func() (bool, string) {
		claimErr := s.kube.Get(ctx, client.ObjectKeyFromObject(claim), &v1.NodeClaim{})
		nodeErr := s.kube.Get(ctx, client.ObjectKey{Name: node}, &corev1.Node{})
		return apierrors.IsNotFound(claimErr) && apierrors.IsNotFound(nodeErr), fmt.Sprintf("claim %v, node %v", claimErr, nodeErr)
	})
	t.Logf("claim and node gone %s after the eviction", time.Since(evicted).Round(time.Second))
	if n := len(s.arm.Calls("DELETE", "/virtualMachines/")); n != 0 {
		t.Errorf("VM deletes = %d after Azure deleted the VM itself", n)
	}
	if nics := s.arm.NICs(); len(nics) != 0 {
		t.Errorf("NICs %v left after the eviction", nics)
	}
}
