package env_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/test/env"
)

// defaultNodeMonitorGracePeriod is kube-controller-manager's own default: the window a heartbeat
// may be late by before the node lifecycle controller marks the node's pods NotReady.
const defaultNodeMonitorGracePeriod = 50 * time.Second

// A node whose next heartbeat is later than kube-controller-manager's default grace period keeps
// its pods Ready. KWOK heartbeats every 20–45 s, later on a loaded machine (52 s seen at load ~12);
// past the default 50 s the node lifecycle controller marked the pods NotReady, KWOK never made them
// Ready again, and the PodDisruptionBudget over them allowed no eviction for the rest of the test
// (TestCrashDuringConsolidation sat idle at 1.385× its plan, every node blocked). The test plays the
// kubelet itself — one heartbeat, then silence — and watches the pod past the default grace period;
// with the default, its pod turned NotReady 52 s after the heartbeat.
func TestLateHeartbeatKeepsPodsReady(t *testing.T) {
	e := env.New(t, env.Options{ControllerManager: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube := e.Client

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "quiet-node", Labels: map[string]string{corev1.LabelHostname: "quiet-node"}}}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	now := metav1.Now()
	node.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}}
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatalf("reporting the node Ready: %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quiet-pod", Namespace: "default"}, Spec: corev1.PodSpec{
		NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	if err := kube.Status().Update(ctx, pod); err != nil {
		t.Fatalf("reporting the pod Ready: %v", err)
	}

	errNotReady := errors.New("pod marked NotReady")
	var why string
	// The window is the point of the test: the default grace period, plus the controller's 5 s
	// monitor period and margin.
	window := defaultNodeMonitorGracePeriod + 20*time.Second
	// The reads use ctx, not the poll's context: near the window's end a client call would refuse
	// to start under the poll's deadline.
	err := wait.PollUntilContextTimeout(ctx, time.Second, window, true, func(context.Context) (bool, error) {
		got := &corev1.Pod{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				why = fmt.Sprintf("%s after the node's only heartbeat (Ready=%s)", time.Since(now.Time).Round(time.Second), c.Status)
				return false, errNotReady
			}
		}
		return false, nil
	})
	switch {
	case errors.Is(err, errNotReady):
		t.Fatalf("kube-controller-manager marked the pod of a node with a late heartbeat NotReady %s; grace period %s", why, env.NodeMonitorGracePeriod)
	case !wait.Interrupted(err):
		t.Fatal(err)
	}
}
