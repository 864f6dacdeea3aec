// Command joist is the Joist node autoscaler: `joist` runs the manager (controllers and webhooks);
// `joist simulate` runs the solver on YAML files offline.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cmd/joist/simulate"
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
}

func main() {
	if len(os.Args) > 1 {
		if code, ok := runSubcommand(os.Args[1], os.Args[2:]); ok {
			os.Exit(code)
		}
	}
	if err := runManager(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "joist:", err)
		os.Exit(1)
	}
}

// runSubcommand runs a non-manager subcommand; ok is false when name is not one.
func runSubcommand(name string, args []string) (code int, ok bool) {
	switch name {
	case "simulate":
		return simulate.Main(args, os.Stdout, os.Stderr), true
	default:
		return 0, false
	}
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntimeMust(clientgoscheme.AddToScheme(s))
	utilruntimeMust(v1.AddToScheme(s))
	utilruntimeMust(policyv1alpha1.AddToScheme(s))
	return s
}

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}

func runManager(args []string) error {
	var f managerFlags
	fs := flag.NewFlagSet("joist", flag.ContinueOnError)
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "Port the admission webhook server listens on.")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "Folder with tls.crt and tls.key for the webhook server (default: controller-runtime's standard cert dir).")
	fs.BoolVar(&f.enableWebhooks, "enable-webhooks", true, "Serve the Guardrail admission webhooks (needs a serving certificate in --webhook-cert-dir).")
	fs.BoolVar(&f.enableLeaderElection, "leader-elect", true, "Elect a leader so only one replica acts at a time.")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease (default: the pod's namespace).")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  newScheme(),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		WebhookServer:           webhook.NewServer(webhook.Options{Port: f.webhookPort, CertDir: f.webhookCertDir}),
		LeaderElection:          f.enableLeaderElection,
		LeaderElectionID:        "joist.karpenter.sh",
		LeaderElectionNamespace: f.leaderElectionNS,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if f.enableWebhooks {
		// TODO(lead): pass InstanceTypes (the cloud provider's GetInstanceTypes) once the provider is built here.
		if err := webhooks.SetupWithManager(mgr, webhooks.Options{}); err != nil {
			return fmt.Errorf("setting up webhooks: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	ctrl.Log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
