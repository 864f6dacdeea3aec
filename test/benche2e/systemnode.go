package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// systemNode selects a cluster that starts with one node the benchmark's pods do not tolerate (a
// control-plane node, as every real cluster has), for Joist's runs and the floor's alike. In the
// empty cluster of the default run the kube-scheduler's first attempt at a pod created before any
// node registered fails with "no nodes available", which parks the pod in its backoff queue instead
// of its unschedulable pool; node events do not move it from there.
var systemNode bool

// systemNodeName names the tainted node -system-node registers.
const systemNodeName = "system-0"

// createSystemNode registers the tainted system node (KWOK runs it) and waits until it is Ready.
func createSystemNode(ctx context.Context, kube client.Client) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: systemNodeName,
			Labels:      map[string]string{v1.LabelHostname: systemNodeName, corev1.LabelOSStable: "linux", "node-role.kubernetes.io/control-plane": ""},
			Annotations: map[string]string{env.KWOKNodeAnnotation: env.KWOKNodeAnnotationValue}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	if err := kube.Create(ctx, node); err != nil {
		return fmt.Errorf("creating the system node: %w", err)
	}
	if err := waitFor(ctx, func() (bool, error) {
		got := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKey{Name: systemNodeName}, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("waiting for the system node to be Ready: %w", err)
	}
	return nil
}
