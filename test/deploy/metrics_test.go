package deploy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/controllers/metrics/auth"
	nodemetrics "github.com/joist-dev/joist/controllers/metrics/node"
	nodeclaimmetrics "github.com/joist-dev/joist/controllers/metrics/nodeclaim"
	nodepoolmetrics "github.com/joist-dev/joist/controllers/metrics/nodepool"
	podmetrics "github.com/joist-dev/joist/controllers/metrics/pod"
	"github.com/joist-dev/joist/test/env"
)

// TestMetricsEndpoint runs the metrics loops in a manager whose /metrics is served as cmd/joist
// serves it (HTTPS, authn/authz filter), scrapes it with a service-account token bound to the
// metrics-reader ClusterRole, and checks the series of a node, its claim and its pool, and that the
// node's series are gone once it is deleted.
func TestMetricsEndpoint(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	e := env.New(t, env.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	port, err := env.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	its := catalog.Default()
	prices := func(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme: e.Scheme,
		Metrics: metricsserver.Options{BindAddress: "127.0.0.1:" + strconv.Itoa(port), SecureServing: true,
			FilterProvider: auth.Filter},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	kube := mgr.GetClient()
	for _, err := range []error{
		nodemetrics.New(kube, prices, clock.RealClock{}).Register(mgr),
		nodeclaimmetrics.New(kube, clock.RealClock{}).Register(mgr),
		nodepoolmetrics.New(kube, prices).Register(mgr),
		podmetrics.New(kube, clock.RealClock{}).Register(mgr),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	token := readerToken(t, ctx, e)
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	waitFor(t, "metrics endpoint", func() bool { code, _ := scrape(url, ""); return code != 0 }, func() {})
	if code, _ := scrape(url, ""); code != http.StatusUnauthorized {
		t.Errorf("scrape without a token: HTTP %d, want 401", code)
	}
	if code, _ := scrape(url, "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("scrape with a token the apiserver does not know: HTTP %d, want 401", code)
	}
	if code, body := scrape(url, serviceAccountToken(t, ctx, e, "no-metrics-access")); code != http.StatusForbidden ||
		!strings.Contains(body, "Authorization denied for user system:serviceaccount:default:no-metrics-access") {
		t.Errorf("scrape by a service account without the metrics-reader role: HTTP %d %q, want 403 naming it", code, body)
	}

	it, offering := its[0], its[0].Offerings[0]
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("100")},
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{offering.CapacityType}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
		}},
	}}
	labels := map[string]string{v1.NodePoolLabelKey: "general", v1.LabelInstanceType: it.Name, v1.LabelTopologyZone: offering.Zone, v1.CapacityTypeLabelKey: offering.CapacityType}
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", Labels: labels}, Spec: v1.NodeClaimSpec{
		Requirements: pool.Spec.Template.Spec.Requirements, NodeClassRef: pool.Spec.Template.Spec.NodeClassRef,
	}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", Labels: labels}}
	for _, o := range []ctrlObject{pool, claim, node} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}}}}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	readyAt := metav1.NewTime(pod.CreationTimestamp.Add(7 * time.Second))
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readyAt}}
	if err := e.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	if err := e.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	nodeSeries := []string{
		`karpenter_nodes_allocatable{arch="",capacity_type="` + offering.CapacityType + `",instance_type="` + it.Name + `",managed="true",node_name="general-abc",nodepool="general",os="",phase="",region="",resource_type="cpu",windows_build="",zone="` + offering.Zone + `"} 4`,
		`joist_node_cost_per_hour{arch="",capacity_type="` + offering.CapacityType + `",instance_type="` + it.Name + `",node="general-abc",nodepool="general",zone="` + offering.Zone + `"} ` + strconv.FormatFloat(offering.Price, 'g', -1, 64),
	}
	want := append([]string{
		`karpenter_nodes_created_total{nodepool="general",zone="` + offering.Zone + `"} 1`,
		`karpenter_pods_startup_duration_seconds_sum 7`,
		`karpenter_pods_startup_duration_seconds_count 1`,
		`karpenter_nodepools_limit{nodepool="general",resource_type="cpu"} 100`,
		`karpenter_nodepools_cost_total{nodepool="general"} ` + strconv.FormatFloat(offering.Price, 'g', -1, 64),
	}, nodeSeries...)
	var body string
	waitFor(t, "node, pool and cost series", func() bool {
		_, body = scrape(url, token)
		return containsAll(body, want)
	}, func() { t.Logf("want %v\ngot:\n%s", want, joistSeries(body)) })

	if err := e.Client.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "deleted node's series gone and terminations counted", func() bool {
		_, body = scrape(url, token)
		return !strings.Contains(body, `node_name="general-abc"`) && !strings.Contains(body, `node="general-abc"`) &&
			containsAll(body, []string{`karpenter_nodes_terminated_total{nodepool="general",zone="` + offering.Zone + `"} 1`,
				`karpenter_nodeclaims_terminated_total{capacity_type="` + offering.CapacityType + `",nodepool="general",zone="` + offering.Zone + `"} 1`,
				`karpenter_nodepools_cost_total{nodepool="general"} 0`})
	}, func() { t.Logf("got:\n%s", joistSeries(body)) })
}

type ctrlObject = client.Object

// readerToken is a token of a service account bound to config/rbac's metrics-reader ClusterRole.
func readerToken(t *testing.T, ctx context.Context, e *env.Env) string {
	t.Helper()
	objs := []ctrlObject{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: "default"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "default"}}},
	}
	for _, o := range objs[1:] {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	return serviceAccountToken(t, ctx, e, "prometheus")
}

// serviceAccountToken creates service account default/name and returns a token of it.
func serviceAccountToken(t *testing.T, ctx context.Context, e *env.Env, name string) string {
	t.Helper()
	if err := e.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}); err != nil {
		t.Fatalf("creating service account %s: %v", name, err)
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	return tr.Status.Token
}

func scrape(url, token string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the metrics server's certificate is self-signed
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func containsAll(body string, lines []string) bool {
	for _, l := range lines {
		if !strings.Contains(body, l+"\n") {
			return false
		}
	}
	return true
}

// joistSeries are the scraped lines of Karpenter's and Joist's own metrics.
func joistSeries(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "karpenter_") || strings.HasPrefix(l, "joist_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func waitFor(t *testing.T, what string, ok func() bool, explain func()) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			explain()
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
