// Package env starts the real control plane every Joist suite runs against: envtest's kube-apiserver
// and etcd with Joist's CRDs (and optionally its webhooks), plus, on request, kube-scheduler,
// kube-controller-manager and KWOK as child processes pointed at the same apiserver, so Deployments
// create pods, pods bind and simulated nodes turn Ready.
package env

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
)

// NodeMonitorGracePeriod is how long kube-controller-manager waits for a node's heartbeat before it
// marks the node unknown and its pods NotReady: well past KWOK's heartbeat interval, so a heartbeat
// a loaded machine delays does not turn Ready pods NotReady for good.
const NodeMonitorGracePeriod = 5 * time.Minute

// Options selects what Start brings up.
type Options struct {
	// CRDDirectoryPaths defaults to <repo>/config/crd/bases.
	CRDDirectoryPaths []string
	// WebhookPaths are webhook configuration manifests (e.g. <repo>/config/webhook) that envtest
	// installs, rewriting their client config to a local serving host, port and certificate.
	WebhookPaths []string
	// Scheme for the returned client; defaults to client-go's scheme plus karpenter.sh/v1.
	Scheme *runtime.Scheme
	// Scheduler, ControllerManager and KWOK start those components as child processes.
	Scheduler         bool
	ControllerManager bool
	KWOK              bool
	// SchedulerArgs are extra kube-scheduler flags after the defaults (a flag given again wins), e.g.
	// SchedulerMetricsArgs' to read its queue metrics, or -v=3 to log its queue moves.
	SchedulerArgs []string
	// LogDir receives the child processes' logs; defaults to a fresh temporary folder.
	LogDir string
}

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	// KubeconfigPath is a kubeconfig for a system:masters user, usable by kubectl and child processes.
	KubeconfigPath string
	// WebhookInstallOptions tells a webhook server where the apiserver expects it (host, port, cert dir).
	WebhookInstallOptions *envtest.WebhookInstallOptions
	LogDir                string

	testEnv *envtest.Environment
	procs   []*process
}

// DefaultScheme is client-go's scheme plus every Joist API group.
func DefaultScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1.AddToScheme(s)
	_ = kwokv1alpha1.AddToScheme(s)
	_ = policyv1alpha1.AddToScheme(s)
	return s
}

// Start brings the control plane up. On error everything already started is stopped again.
func Start(opts Options) (_ *Env, err error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	if opts.CRDDirectoryPaths == nil {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		opts.CRDDirectoryPaths = []string{filepath.Join(root, "config", "crd", "bases")}
	}
	if opts.Scheme == nil {
		opts.Scheme = DefaultScheme()
	}
	if opts.LogDir == "" {
		if opts.LogDir, err = os.MkdirTemp("", "joist-env-"); err != nil {
			return nil, fmt.Errorf("creating log folder: %w", err)
		}
	}
	e := &Env{Scheme: opts.Scheme, LogDir: opts.LogDir}
	e.testEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing: true,
		Scheme:                opts.Scheme,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: opts.WebhookPaths},
	}
	if e.Config, err = e.testEnv.Start(); err != nil {
		// envtest leaves etcd and kube-apiserver running when a later step (CRD or webhook
		// install) fails; stop them so a failed start leaks no processes.
		return nil, errors.Join(fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err), e.testEnv.Stop())
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	e.WebhookInstallOptions = &e.testEnv.WebhookInstallOptions
	if e.Client, err = client.New(e.Config, client.Options{Scheme: opts.Scheme}); err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	if e.KubeconfigPath, err = e.writeAdminKubeconfig(); err != nil {
		return nil, err
	}
	if err = e.startChildren(assets, opts); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) writeAdminKubeconfig() (string, error) {
	user, err := e.testEnv.AddUser(envtest.User{Name: "joist-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering admin kubeconfig: %w", err)
	}
	path := filepath.Join(e.LogDir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return "", fmt.Errorf("writing admin kubeconfig: %w", err)
	}
	return path, nil
}

// startChildren starts the optional components. Flags are the ones found to work with envtest:
// no secure serving (envtest hands out no serving certs), no serviceaccount-token controller (no
// signing key), and client rate limits high enough that tests measure Joist, not client throttling.
func (e *Env) startChildren(assets string, opts Options) error {
	fast := []string{"--kube-api-qps=5000", "--kube-api-burst=10000"}
	if opts.ControllerManager {
		args := append([]string{
			"--kubeconfig=" + e.KubeconfigPath, "--leader-elect=false", "--secure-port=0",
			"--controllers=*,-serviceaccount-token", "--concurrent-deployment-syncs=10",
			"--concurrent-replicaset-syncs=10",
			// KWOK's node heartbeat comes every 20–45 s (its node-heartbeat stage), later on a
			// loaded machine; past the default 50 s grace the node lifecycle controller marks the
			// node's pods NotReady, and KWOK never makes them Ready again: a PDB over them then
			// allows no eviction for the rest of the test (heartbeat_test.go).
			"--node-monitor-grace-period=" + NodeMonitorGracePeriod.String(),
		}, fast...)
		if err := e.start("kube-controller-manager", assets, args...); err != nil {
			return err
		}
	}
	if opts.Scheduler {
		args := append([]string{"--kubeconfig=" + e.KubeconfigPath, "--leader-elect=false", "--secure-port=0"}, fast...)
		args = append(args, opts.SchedulerArgs...)
		if err := e.start("kube-scheduler", assets, args...); err != nil {
			return err
		}
	}
	if opts.KWOK {
		stages := filepath.Join(e.LogDir, "kwok-stages.yaml")
		if err := writeKWOKStages(stages); err != nil {
			return fmt.Errorf("writing kwok stages: %w", err)
		}
		port, err := FreePort()
		if err != nil {
			return err
		}
		if err := e.start("kwok", assets,
			"--kubeconfig="+e.KubeconfigPath, "--config="+stages,
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector="+KWOKNodeAnnotation+"="+KWOKNodeAnnotationValue,
			"--server-address=127.0.0.1:"+strconv.Itoa(port),
		); err != nil {
			return err
		}
	}
	return nil
}

func (e *Env) start(name, assets string, args ...string) error {
	p, err := startProcess(name, filepath.Join(assets, name), e.LogDir, args...)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	return nil
}

// CheckChildren returns an error naming any child process that has exited, with its log path.
func (e *Env) CheckChildren() error {
	var errs []error
	for _, p := range e.procs {
		if p.exited() {
			errs = append(errs, fmt.Errorf("%s exited: see %s", p.name, p.log.Name()))
		}
	}
	return errors.Join(errs...)
}

// Stop stops every process the environment started, children first.
func (e *Env) Stop() error {
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].stop()
	}
	e.procs = nil
	if e.testEnv == nil {
		return nil
	}
	if err := e.testEnv.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver and etcd: %w", err)
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
