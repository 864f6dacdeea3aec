package main

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/joist-dev/joist/controllers"
	"github.com/joist-dev/joist/webhooks"
)

// managerFlags are the manager's command-line settings.
type managerFlags struct {
	metricsAddr          string
	probeAddr            string
	webhookPort          int
	webhookCertDir       string
	enableLeaderElection bool
	enableWebhooks       bool
	leaderElectionNS     string
	kubeAPIQPS           float64
	kubeAPIBurst         int
	cloud                cloudFlags
	controllers          controllers.Options
}

func parseManagerFlags(args []string) (managerFlags, zap.Options, error) {
	f := managerFlags{controllers: controllers.DefaultOptions()}
	fs := flag.NewFlagSet("joist", flag.ContinueOnError)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to; \"0\" disables them.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "Folder with tls.crt and tls.key for the webhook server (default: controller-runtime's standard cert dir).")
	fs.BoolVar(&f.enableWebhooks, "enable-webhooks", true, "Serve the Guardrail admission webhooks (needs a serving certificate in --webhook-cert-dir).")
	fs.BoolVar(&f.enableLeaderElection, "leader-elect", true, "Elect a leader so only one replica acts at a time.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the pod's namespace).")
	fs.Float64Var(&f.kubeAPIQPS, "kube-api-qps", 500, "Queries per second to the kube-apiserver.")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 1000, "Burst of queries to the kube-apiserver.")
	p := &f.controllers.Provisioning
	fs.DurationVar(&p.BatchIdleDuration, "batch-idle-duration", p.BatchIdleDuration, "Close a provisioning batch when no new pending pod arrived for this long.")
	fs.DurationVar(&p.BatchMaxDuration, "batch-max-duration", p.BatchMaxDuration, "Close a provisioning batch this long after its first pod, however busy.")
	fs.DurationVar(&p.BatchSettleDuration, "batch-settle-duration", p.BatchSettleDuration, "Close a provisioning batch of ReplicaSet, StatefulSet and Job pods once no new pod arrived for this long and those workloads have created all their pods (0: idle and max windows only).")
	fs.DurationVar(&f.controllers.NodeClaim.RegistrationTimeout, "registration-timeout", f.controllers.NodeClaim.RegistrationTimeout, "Delete a launched NodeClaim whose Node did not register within this.")
	f.cloud.bind(fs)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return f, zapOpts, err
	}
	if p.BatchIdleDuration <= 0 || p.BatchMaxDuration < p.BatchIdleDuration {
		return f, zapOpts, fmt.Errorf("--batch-idle-duration must be > 0 and ≤ --batch-max-duration (got %s and %s)", p.BatchIdleDuration, p.BatchMaxDuration)
	}
	if p.BatchSettleDuration < 0 || p.BatchSettleDuration > p.BatchIdleDuration {
		return f, zapOpts, fmt.Errorf("--batch-settle-duration must be ≥ 0 and ≤ --batch-idle-duration (got %s and %s)", p.BatchSettleDuration, p.BatchIdleDuration)
	}
	return f, zapOpts, nil
}

func runManager(args []string) error {
	f, zapOpts, err := parseManagerFlags(args)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.kubeAPIQPS), f.kubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		WebhookServer:           webhook.NewServer(webhook.Options{Port: f.webhookPort, CertDir: f.webhookCertDir}),
		LeaderElection:          f.enableLeaderElection,
		LeaderElectionID:        "joist.karpenter.sh",
		LeaderElectionNamespace: f.leaderElectionNS,
		GracefulShutdownTimeout: ptrDuration(15 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	cloud, err := f.cloud.build(mgr.GetClient())
	if err != nil {
		return err
	}
	if r, ok := cloud.(manager.Runnable); ok { // a provider's own background work (kwok: registering booting instances)
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("adding the cloud provider: %w", err)
		}
	}
	if err := controllers.Register(ctx, mgr, cloud, clock.RealClock{}, f.controllers); err != nil {
		return err
	}
	if f.enableWebhooks {
		if err := webhooks.SetupWithManager(mgr, webhooks.Options{InstanceTypes: cloud.GetInstanceTypes}); err != nil {
			return fmt.Errorf("setting up webhooks: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	ctrl.Log.Info("starting manager", "cloudProvider", cloud.Name())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

func ptrDuration(d time.Duration) *time.Duration { return &d }
