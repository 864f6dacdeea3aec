package reliability

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/test/env"
)

// TestScale provisions for pods that need one small node per five pods (5,000 pods on 1,000 nodes in
// the long mode, 500 on 100 in the short one) and reports the manager's peak RSS, reconcile latency
// p99 per controller and the apiserver's requests per second by verb.
func TestScale(t *testing.T) {
	pods := 500
	if long() {
		pods = 5000
	}
	port, err := env.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := newStack(t, fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--metrics-secure=false")
	s.setUp(ctx, 0)
	// Only 2-cpu types: five 350m pods fill one, so the cluster grows to pods/5 nodes.
	s.onlyCPU(ctx, "2")
	s.start()
	before, err := apiserverRequests(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "scale", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(pods)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "scale"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "scale"}}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}},
	}
	if err := s.kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	took := s.waitRunning(ctx, pods, 30*time.Minute)
	elapsed := time.Since(start)
	inv, err := s.settle(ctx, 3*time.Minute)
	if err != nil {
		t.Fatalf("after scale-up: %v", err)
	}
	rss := s.rssMiB()
	after, err := apiserverRequests(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	p99, err := reconcileP99(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	rows := []string{
		fmt.Sprintf("| pods / nodes | %d / %d (%d empty) |", pods, inv.instances, inv.emptyNodes),
		fmt.Sprintf("| all Running after | %s |", took.Round(100*time.Millisecond)),
		fmt.Sprintf("| manager peak RSS | %.0f MiB |", rss),
	}
	for _, c := range slices.Sorted(maps.Keys(p99)) {
		rows = append(rows, fmt.Sprintf("| reconcile p99, %s | %s |", c, p99[c]))
	}
	byVerb := map[string]float64{}
	for k, n := range after {
		byVerb[strings.Fields(k)[0]] += n - before[k]
	}
	for _, verb := range slices.Sorted(maps.Keys(byVerb)) {
		rows = append(rows, fmt.Sprintf("| apiserver %s/s (all clients) | %.1f |", verb, byVerb[verb]/elapsed.Seconds()))
	}
	report(t, fmt.Sprintf("scale (%d pods)", pods), "| figure | value |\n|---|---|", rows)
	if inv.instances < pods/6 {
		t.Errorf("%d nodes for %d pods of 350m on 2-cpu types, want about %d", inv.instances, pods, pods/5)
	}
}

// apiserverRequests reads apiserver_request_total by "verb resource".
func apiserverRequests(ctx context.Context, s *stack) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(s.env.Config)
	if err != nil {
		return nil, err
	}
	return env.ApiserverRequests(ctx, cs, func(labels map[string]string) string {
		return labels["verb"] + " " + labels["resource"]
	})
}

// reconcileP99 estimates each controller's reconcile-time p99 from the manager's histogram buckets.
func reconcileP99(ctx context.Context, port int) (map[string]time.Duration, error) {
	families, err := env.ScrapeMetrics(ctx, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	return env.HistogramP99(families, "controller_runtime_reconcile_time_seconds", "controller"), nil
}

// onlyCPU restricts the NodePool to instance types with that many cpus, to get many nodes.
func (s *stack) onlyCPU(ctx context.Context, cpus string) {
	s.t.Helper()
	np := &v1.NodePool{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
		s.t.Fatal(err)
	}
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: "joist.dev/instance-cpu", Operator: corev1.NodeSelectorOpIn, Values: []string{cpus}})
	if err := s.kube.Update(ctx, np); err != nil {
		s.t.Fatal(err)
	}
}
