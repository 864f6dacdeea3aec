package webhooks_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	guardrailreport "github.com/joist-dev/joist/controllers/guardrail"
	"github.com/joist-dev/joist/test/env"
	"github.com/joist-dev/joist/webhooks"
)

// warningRecorder collects the Warning headers the apiserver sends, as kubectl prints them.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, text)
}

// take returns the warnings received since the last call.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.messages
	w.messages = nil
	return out
}

// suite is a real apiserver calling Joist's webhooks over TLS, served by a running manager.
type suite struct {
	env      *env.Env
	client   client.Client // goes through the webhooks; records warnings
	warnings *warningRecorder
	cache    client.Reader // the manager's cache the webhooks read from
	stop     func()        // stops the manager
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	scheme := env.DefaultScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	e := env.New(t, env.Options{
		Scheme:            scheme,
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
		WebhookPaths:      []string{filepath.Join(root, "config", "webhook")},
	})
	wio := e.WebhookInstallOptions
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	if err := webhooks.SetupWithManager(mgr, webhooks.Options{InstanceTypes: func(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) {
		return testCatalog(), nil
	}}); err != nil {
		t.Fatalf("setting up webhooks: %v", err)
	}
	reportOpts := guardrailreport.DefaultOptions()
	reportOpts.MinInterval = 0
	if err := guardrailreport.New(mgr.GetClient(), nil, mgr.GetEventRecorder("joist"), clock.RealClock{}, reportOpts).Register(mgr); err != nil {
		t.Fatalf("registering the guardrail report: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	waitForWebhookServer(t, net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort)))

	rec := &warningRecorder{}
	cfg := rest.CopyConfig(e.Config)
	cfg.WarningHandler = rec
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &suite{env: e, client: c, warnings: rec, cache: mgr.GetClient(), stop: stop}
}

func waitForWebhookServer(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // local test server
		if err == nil {
			_ = conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook server on %s never came up: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eventually polls cond until it holds or 20s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// create creates obj with the admin client (through the webhooks) and waits until the webhooks'
// cache sees it, so that the next admission decision takes it into account.
func (s *suite) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := s.client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	s.waitCached(t, obj)
}

func (s *suite) waitCached(t *testing.T, obj client.Object) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	probe := obj.DeepCopyObject().(client.Object)
	want, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	eventually(t, fmt.Sprintf("cache to see %s at %s", key, obj.GetResourceVersion()), func() bool {
		err := s.cache.Get(context.Background(), key, probe)
		// At or after this version: the guardrail report controller writes Guardrails' status right
		// after each change. (etcd's resource versions are integers; the test apiserver uses etcd.)
		got, _ := strconv.ParseUint(probe.GetResourceVersion(), 10, 64)
		return err == nil && got >= want
	})
}

// remove deletes obj and waits until the cache no longer has it.
func (s *suite) remove(t *testing.T, obj client.Object) {
	t.Helper()
	if err := s.client.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s: %v", obj.GetName(), err)
	}
	probe := obj.DeepCopyObject().(client.Object)
	eventually(t, "cache to forget "+obj.GetName(), func() bool {
		return apierrors.IsNotFound(s.cache.Get(context.Background(), client.ObjectKeyFromObject(obj), probe))
	})
}

// TestWebhooks runs every webhook scenario against one control plane; the fail-open scenario stops
// the manager and so runs last.
func TestWebhooks(t *testing.T) {
	s := newSuite(t)
	t.Run("NodePools", func(t *testing.T) { testNodePools(t, s) })
	t.Run("NodePoolUpdate", func(t *testing.T) { testNodePoolUpdate(t, s) })
	t.Run("Guardrails", func(t *testing.T) { testGuardrails(t, s) })
	t.Run("Pods", func(t *testing.T) { testPods(t, s) })
	t.Run("DoNotDisrupt", func(t *testing.T) { testDoNotDisrupt(t, s) })
	t.Run("Enforcement", func(t *testing.T) { testEnforcement(t, s) })
	t.Run("ManagerStopped", func(t *testing.T) { testManagerStopped(t, s) })
}

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func ptr[T any](v T) *T { return &v }

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// testCatalog is the provider catalog the NodePool webhook counts against: 4 general types with
// spot and on-demand offerings in two zones, and one GPU type.
func testCatalog() []*catalog.InstanceType {
	mk := func(name, arch string, gpus int64) *catalog.InstanceType {
		it := &catalog.InstanceType{
			Name:     name,
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
			Labels:   map[string]string{v1.LabelArch: arch, v1.LabelOS: "linux"},
		}
		if gpus > 0 {
			it.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
		}
		for _, z := range []string{"zone-a", "zone-b"} {
			it.Offerings = append(it.Offerings,
				catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: 0.1, Available: true},
				catalog.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: 0.3, Available: true})
		}
		return it
	}
	return []*catalog.InstanceType{
		mk("m5.large", "amd64", 0), mk("m5.xlarge", "amd64", 0),
		mk("c6g.large", "arm64", 0), mk("c6g.xlarge", "arm64", 0),
		mk("p3.2xlarge", "amd64", 1),
	}
}
