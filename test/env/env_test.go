package env_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/test/env"
)

// TestSmoke proves the stack: KWOK turns a Node Ready, kube-controller-manager creates a Deployment's
// pods (and lifts the not-ready taint), kube-scheduler binds them, and KWOK reports them Running.
func TestSmoke(t *testing.T) {
	e := env.New(t, env.Options{Scheduler: true, ControllerManager: true, KWOK: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "kwok-node-0",
			Annotations: map[string]string{env.KWOKNodeAnnotation: env.KWOKNodeAnnotationValue},
			Labels:      map[string]string{corev1.LabelHostname: "kwok-node-0", "type": "kwok"},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			},
		},
	}
	if err := e.Client.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	labels := map[string]string{"app": "smoke"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"type": "kwok"},
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
						}},
					}},
				},
			},
		},
	}
	if err := e.Client.Create(ctx, deploy); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}

	start := time.Now()
	var pods corev1.PodList
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := e.CheckChildren(); err != nil {
			return false, err
		}
		if err := e.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 3, nil
	})
	if err != nil {
		t.Fatalf("waiting for 3 pods Running on %s: %v (pods: %d)", node.Name, err, len(pods.Items))
	}
	t.Logf("3 pods Running on the KWOK node %s after start", time.Since(start).Round(100*time.Millisecond))

	got := &corev1.Node{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	ready := false
	for _, c := range got.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	if !ready {
		t.Errorf("node %s is not Ready: %+v", node.Name, got.Status.Conditions)
	}
	for _, taint := range got.Spec.Taints {
		if taint.Key == corev1.TaintNodeNotReady {
			t.Errorf("node still carries %s", taint.Key)
		}
	}
}
