package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/joist-dev/joist/cloudprovider"
	cpmetrics "github.com/joist-dev/joist/cloudprovider/metrics"
	"github.com/joist-dev/joist/controllers"
	"github.com/joist-dev/joist/controllers/metrics/auth"
	"github.com/joist-dev/joist/webhooks"
)

// managerFlags are the manager's command-line settings.
type managerFlags struct {
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	probeAddr               string
	pprofAddr               string
	webhookPort             int
	webhookCertDir          string
	enableHTTP2             bool
	enableLeaderElection    bool
	enableWebhooks          bool
	leaderElectionNS        string
	installNamespace        string
	gracefulShutdownTimeout time.Duration
	kubeAPIQPS              float64
	kubeAPIBurst            int
	memoryLimit             int
	cloud                   cloudFlags
	controllers             controllers.Options
}

// installNamespaceEnv is set from the pod's metadata.namespace through the downward API.
const installNamespaceEnv = "POD_NAMESPACE"

func parseManagerFlags(args []string) (managerFlags, zap.Options, error) {
	f := managerFlags{controllers: controllers.DefaultOptions()}
	fs := flag.NewFlagSet("joist", flag.ContinueOnError)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS, authenticating and authorizing each scrape (TokenReview and SubjectAccessReview for GET /metrics); false serves plain HTTP to anyone.")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "Folder with tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate generated at start).")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to; \"0\" disables them.")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "Address Go's net/http/pprof profiles are served on (plain HTTP, no authentication: bind it to localhost); \"0\" disables them.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "Folder with tls.crt and tls.key for the webhook server (default: controller-runtime's standard cert dir).")
	fs.BoolVar(&f.enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the webhook and metrics servers (off: HTTP/2 Rapid Reset and Stream Cancellation, CVE-2023-44487/39325).")
	fs.BoolVar(&f.enableWebhooks, "enable-webhooks", true, "Serve the Guardrail admission webhooks (needs a serving certificate in --webhook-cert-dir).")
	fs.BoolVar(&f.enableLeaderElection, "leader-elect", true, "Elect a leader so only one replica acts at a time.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: --install-namespace).")
	fs.StringVar(&f.installNamespace, "install-namespace", os.Getenv(installNamespaceEnv), "Namespace Joist runs in (default: $"+installNamespaceEnv+", set by the downward API); the pod webhooks leave it alone.")
	fs.DurationVar(&f.gracefulShutdownTimeout, "graceful-shutdown-timeout", 25*time.Second, "How long runnables get to stop on SIGTERM; keep it below the pod's terminationGracePeriodSeconds (30 s in config/manager).")
	fs.Float64Var(&f.kubeAPIQPS, "kube-api-qps", 500, "Queries per second to the kube-apiserver.")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 1000, "Burst of queries to the kube-apiserver.")
	p := &f.controllers.Provisioning
	fs.DurationVar(&p.BatchIdleDuration, "batch-idle-duration", p.BatchIdleDuration, "Close a provisioning batch when no new pending pod arrived for this long.")
	fs.DurationVar(&p.BatchMaxDuration, "batch-max-duration", p.BatchMaxDuration, "Close a provisioning batch this long after its first pod, however busy.")
	fs.DurationVar(&p.BatchSettleDuration, "batch-settle-duration", p.BatchSettleDuration, "Close a provisioning batch once the kube-scheduler has tried every pod of it, no new pod arrived for this long and its ReplicaSets, StatefulSets and Jobs have created all their pods (0: idle and max windows only).")
	fs.DurationVar(&f.controllers.NodeClaim.RegistrationTimeout, "registration-timeout", f.controllers.NodeClaim.RegistrationTimeout, "Delete a launched NodeClaim whose Node did not register within this.")
	n := &f.controllers.Nomination
	fs.DurationVar(&n.NominationTTL, "nomination-ttl", n.NominationTTL, "How long after its NodeClaim initialized a pod's nomination still counts; a pod still pending then is planned again.")
	fs.BoolVar(&n.PinPlannedPods, "pin-planned-pods", n.PinPlannedPods, "Steer the pods planned onto a new node with a taint of its own (joist.dev/planned=<nodeclaim>:NoSchedule, lifted once they bound) and a toleration added to them, instead of status.nominatedNodeName.")
	gc := &f.controllers.GarbageCollection
	fs.DurationVar(&gc.Period, "garbage-collection-period", gc.Period, "How often instances without a NodeClaim and NodeClaims without an instance are looked for.")
	d := &f.controllers.Disruption
	fs.DurationVar(&d.PollInterval, "disruption-poll-interval", d.PollInterval, "How often the disruption loop looks for nodes to consolidate, replace or remove.")
	fs.DurationVar(&d.ValidationDelay, "consolidation-validation-delay", d.ValidationDelay, "How long a consolidation decision must still hold before it is carried out.")
	envs := newEnvFlags(fs)
	envs.Float64(&d.MinSavingsFraction, "consolidation-min-savings", "CONSOLIDATION_MIN_SAVINGS", d.MinSavingsFraction,
		"Least share (0–1) of the disrupted nodes' price a consolidation must save; 0 takes any saving.")
	envs.Int(&f.memoryLimit, "memory-limit", memoryLimitEnv, 0,
		"The container's memory limit in bytes (the manifests set it from resources.limits.memory); the Go runtime's soft memory limit is set to 90 % of it unless $GOMEMLIMIT is set. 0: no soft limit.")
	envs.Bool(&d.SpotToSpotConsolidation, "spot-to-spot-consolidation", "SPOT_TO_SPOT_CONSOLIDATION", d.SpotToSpotConsolidation,
		"Let consolidation replace spot nodes by a spot node (Karpenter's SpotToSpotConsolidation feature gate, off by default there too).")
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
	for name, v := range map[string]time.Duration{"nomination-ttl": n.NominationTTL, "garbage-collection-period": gc.Period, "disruption-poll-interval": d.PollInterval} {
		if v <= 0 {
			return f, zapOpts, fmt.Errorf("--%s must be > 0 (got %s)", name, v)
		}
	}
	if d.ValidationDelay < 0 {
		return f, zapOpts, fmt.Errorf("--consolidation-validation-delay must be ≥ 0 (got %s)", d.ValidationDelay)
	}
	if err := envs.check(); err != nil {
		return f, zapOpts, err
	}
	if d.MinSavingsFraction < 0 || d.MinSavingsFraction >= 1 {
		return f, zapOpts, fmt.Errorf("--consolidation-min-savings must be in [0, 1) (got %v from %s)", d.MinSavingsFraction, envs.source("consolidation-min-savings"))
	}
	if f.memoryLimit < 0 {
		return f, zapOpts, fmt.Errorf("--memory-limit must be ≥ 0 bytes (got %d from %s)", f.memoryLimit, envs.source("memory-limit"))
	}
	if f.gracefulShutdownTimeout <= 0 {
		return f, zapOpts, fmt.Errorf("--graceful-shutdown-timeout must be > 0 (got %s)", f.gracefulShutdownTimeout)
	}
	if err := f.cloud.validate(); err != nil {
		return f, zapOpts, err
	}
	if f.leaderElectionNS == "" {
		f.leaderElectionNS = f.installNamespace
	}
	f.controllers.Guardrail.InstallNamespace = f.installNamespace
	return f, zapOpts, nil
}

// tlsOpts are the TLS settings of every server the manager runs.
func (f managerFlags) tlsOpts() []func(*tls.Config) {
	if f.enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}

// metricsOptions serve /metrics over HTTPS behind a TokenReview and SubjectAccessReview filter
// unless --metrics-secure=false.
func (f managerFlags) metricsOptions() metricsserver.Options {
	opts := metricsserver.Options{BindAddress: f.metricsAddr, TLSOpts: f.tlsOpts()}
	if f.metricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = auth.Filter
		opts.CertDir = f.metricsCertDir
	}
	return opts
}

func runManager(args []string) error {
	f, zapOpts, err := parseManagerFlags(args)
	if err != nil {
		return err
	}
	ctrl.SetLogger(newLogger(&zapOpts))
	if soft := applyMemoryLimit(f.memoryLimit); soft > 0 {
		ctrl.Log.Info("soft memory limit set from the container's", "containerLimit", f.memoryLimit, "GOMEMLIMIT", soft)
	}
	ctrl.Log.Info("cloud provider selected", "cloudProvider", f.cloud.provider, "selectedBy", f.cloud.providerSource())
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
		Scheme:                        scheme,
		Cache:                         controllers.CacheOptions(),
		Metrics:                       f.metricsOptions(),
		HealthProbeBindAddress:        f.probeAddr,
		PprofBindAddress:              f.pprofAddr,
		WebhookServer:                 webhook.NewServer(webhook.Options{Port: f.webhookPort, CertDir: f.webhookCertDir, TLSOpts: f.tlsOpts()}),
		LeaderElection:                f.enableLeaderElection,
		LeaderElectionID:              "joist.karpenter.sh",
		LeaderElectionNamespace:       f.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &f.gracefulShutdownTimeout,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	cloud, err := f.cloud.build(mgr.GetClient())
	if err != nil {
		return err
	}
	if cloud.Name() == providerKWOK {
		if err := checkNodeCreate(ctx, mgr.GetClient(), f.cloud.providerSource()); err != nil {
			return err
		}
	}
	cloud = cpmetrics.Decorate(cloud)
	if r, ok := cloudprovider.As[manager.Runnable](cloud); ok { // a provider's own background work (kwok: registering booting instances)
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("adding the cloud provider: %w", err)
		}
	}
	if err := controllers.Register(ctx, mgr, cloud, clock.RealClock{}, f.controllers); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	ready := healthz.Ping
	if f.enableWebhooks {
		if err := webhooks.SetupWithManager(mgr, webhooks.Options{InstanceTypes: cloud.GetInstanceTypes, InstallNamespace: f.installNamespace}); err != nil {
			return fmt.Errorf("setting up webhooks: %w", err)
		}
		// Ready only once the webhook server serves: the webhooks of two replicas fail closed for
		// NodePools and Guardrails, so traffic must not reach a replica still loading its certificate.
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	ctrl.Log.Info("starting manager", "version", version, "cloudProvider", cloud.Name(), "installNamespace", f.installNamespace)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
