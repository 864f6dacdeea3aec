package env

import (
	"context"
	"testing"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joist-dev/joist/controllers/indexes"
)

// StartTestManager runs a controller-runtime manager on the environment's apiserver for a test that
// drives a controller through its watches: no metrics or health endpoints, controller names not
// checked (a test binary registers the same controller many times), the field indexes the
// controllers rely on registered. setup wires the test's controllers before the manager starts; the
// manager runs, its cache synced when StartTestManager returns, until the test ends.
func (e *Env) StartTestManager(t testing.TB, setup func(ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := indexes.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		cancel()
		t.Fatalf("registering field indexes: %v", err)
	}
	if err := setup(mgr); err != nil {
		cancel()
		t.Fatalf("setting up the test's controllers: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
	return mgr
}
