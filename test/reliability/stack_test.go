package reliability

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// joistBinary is the manager under test: $JOIST_BINARY, or built once into a temporary folder.
var joistBinary string

func TestMain(m *testing.M) { os.Exit(env.RunWithManagerBinary(m, &joistBinary)) }

// long reports whether the full suites run (make test-reliability); otherwise short versions do.
func long() bool { return os.Getenv("RELIABILITY_LONG") != "" }

// stack is a control plane with a Joist manager process that can be killed and started again.
type stack struct {
	t       *testing.T
	env     *env.Env
	kube    client.Client
	args    []string // after env.StartManager's defaults
	manager *env.Manager
	starts  int
	// kubeconfig the manager uses; the environment's admin kubeconfig when empty.
	kubeconfig string
}

func newStack(t *testing.T, extraArgs ...string) *stack {
	t.Helper()
	e := env.New(t, env.Options{Scheduler: true, ControllerManager: true, KWOK: true})
	e.Config.QPS, e.Config.Burst = 500, 1000
	kube, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, env: e, kube: kube, args: extraArgs}
	t.Cleanup(func() { s.kill() })
	return s
}

// start runs a fresh manager process, logging to joist-<n>.log in the environment's log folder.
func (s *stack) start() {
	s.t.Helper()
	s.starts++
	m, err := s.env.StartManager(env.ManagerOptions{Binary: joistBinary, Args: s.args, Kubeconfig: s.kubeconfig,
		LogName: fmt.Sprintf("joist-%d.log", s.starts)})
	if err != nil {
		s.t.Fatal(err)
	}
	s.manager = m
}

// kill SIGKILLs the manager: no shutdown hooks, no flushing, as in a node failure or OOM kill.
func (s *stack) kill() {
	if s.manager == nil {
		return
	}
	s.manager.Kill()
	s.manager = nil
}

// rssMiB is the manager's peak resident set (VmHWM).
func (s *stack) rssMiB() float64 {
	if s.manager == nil {
		return 0
	}
	rss, _, _ := s.manager.Stats()
	return rss
}

// setUp creates the KWOKNodeClass (with a registration delay, so instances boot across crashes)
// and a Ready NodePool.
func (s *stack) setUp(ctx context.Context, registrationDelay time.Duration) {
	s.t.Helper()
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "kwok-image-v1"}}
	if registrationDelay > 0 {
		nc.Spec.RegistrationDelay = &metav1.Duration{Duration: registrationDelay}
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			{Key: "joist.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		},
		NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "default"},
	}}}}
	for _, obj := range []client.Object{nc, np} {
		if err := s.kube.Create(ctx, obj); err != nil {
			s.t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// deployments spreads n pods over four sizes.
func deployments(n int) []*appsv1.Deployment {
	sizes := []struct{ cpu, memory string }{{"500m", "1Gi"}, {"1", "2Gi"}, {"2", "4Gi"}, {"4", "8Gi"}}
	var out []*appsv1.Deployment
	for i, sz := range sizes {
		replicas := int32(n / len(sizes))
		if i == 0 {
			replicas += int32(n % len(sizes))
		}
		labels := map[string]string{"app": fmt.Sprintf("app-%d", i)}
		out = append(out, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: labels["app"], Namespace: "default"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sz.cpu), corev1.ResourceMemory: resource.MustParse(sz.memory)}}}}}}},
		})
	}
	return out
}

// runningPods counts pods Running on a node.
func (s *stack) runningPods(ctx context.Context) (int, error) {
	var pods corev1.PodList
	if err := s.kube.List(ctx, &pods, client.InNamespace("default")); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
			n++
		}
	}
	return n, nil
}

// waitRunning waits until want pods run, failing the test after timeout.
func (s *stack) waitRunning(ctx context.Context, want int, timeout time.Duration) time.Duration {
	s.t.Helper()
	start := time.Now()
	for {
		n, err := s.runningPods(ctx)
		if err == nil && n >= want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			s.t.Fatalf("%d of %d pods running after %s (err %v)", n, want, timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
