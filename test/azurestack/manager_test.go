// Package azurestack runs the joist binary, as an install runs it with --cloud-provider=azure, against
// a real kube-apiserver (envtest) and kube-scheduler and the HTTP-level ARM fake
// (cloudprovider/azure/fake), which the binary reaches through the real Azure SDK clients: it
// authenticates through azidentity's managed identity credential at the fake's identity endpoint,
// its VM and NIC creates and deletes are long-running operations polled through
// Azure-AsyncOperation, and ARM throttles it with 429 and Retry-After. The test plays the kubelet:
// it registers the Node the VM's custom data describes (name, provider ID, labels, taints).
package azurestack

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	"github.com/joist-dev/joist/cloudprovider/azure/fake"
	"github.com/joist-dev/joist/test/env"
)

// joistBinary is the manager under test: $JOIST_BINARY, or built once into a temporary folder.
var joistBinary string

func TestMain(m *testing.M) {
	env.DiscardLogs()
	code := func() int {
		if b := os.Getenv("JOIST_BINARY"); b != "" {
			joistBinary = b
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "joist-azurestack-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		root, err := env.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		joistBinary = filepath.Join(dir, "joist")
		build := exec.Command("go", "build", "-o", joistBinary, "./cmd/joist")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the manager:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// Cluster settings the manager gets as docs/azure.md has an install set them.
const (
	clusterName     = "prod"
	clusterEndpoint = "https://prod-dns-1234abcd.hcp.eastus.azmk8s.io:443"
	bootstrapToken  = "abcdef.0123456789abcdef"
	dnsServiceIP    = "10.0.0.10"
	sshKey          = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC joist@test"
)

// stack is a control plane, the ARM fake and a joist manager process that can be killed and started again.
type stack struct {
	t       *testing.T
	env     *env.Env
	kube    client.Client
	arm     *fake.Server
	manager *exec.Cmd
	starts  int
}

func newStack(t *testing.T) *stack {
	t.Helper()
	scheme := env.DefaultScheme()
	if err := azv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	e := env.New(t, env.Options{Scheme: scheme, Scheduler: true})
	arm := fake.New()
	s := &stack{t: t, env: e, kube: e.Client, arm: arm}
	t.Cleanup(func() { s.dumpOnFailure(); s.kill(); arm.Close() })
	return s
}

// start runs a fresh manager process selecting the azure provider, with only the environment an
// install gives it (nothing of the test's own), logging to joist-<n>.log in the environment's log folder.
func (s *stack) start() {
	s.t.Helper()
	s.starts++
	logFile, err := os.Create(filepath.Join(s.env.LogDir, fmt.Sprintf("joist-%d.log", s.starts)))
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(joistBinary, "--cloud-provider=azure", "--azure-endpoint="+s.arm.URL(),
		"--leader-elect=false", "--enable-webhooks=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Env = append([]string{
		"KUBECONFIG=" + s.env.KubeconfigPath, "HOME=" + s.t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"ARM_SUBSCRIPTION_ID=" + fake.Subscription, "LOCATION=" + fake.Location,
		"AZURE_NODE_RESOURCE_GROUP=" + fake.ResourceGroup, "VNET_SUBNET_ID=" + fake.SubnetID,
		"CLUSTER_NAME=" + clusterName, "CLUSTER_ENDPOINT=" + clusterEndpoint, "CLUSTER_CA_BUNDLE=" + caBundle(s.env),
		"KUBELET_BOOTSTRAP_TOKEN=" + bootstrapToken, "SSH_PUBLIC_KEY=" + sshKey, "DNS_SERVICE_IP=" + dnsServiceIP,
	}, s.arm.ManagedIdentityEnv()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting %s: %v", joistBinary, err)
	}
	s.manager = cmd
	go func() { _ = cmd.Wait(); _ = logFile.Close() }()
}

// kill SIGKILLs the manager: no shutdown hooks, as in a node failure or an OOM kill.
func (s *stack) kill() {
	if s.manager == nil || s.manager.Process == nil {
		return
	}
	_ = syscall.Kill(-s.manager.Process.Pid, syscall.SIGKILL)
	s.manager = nil
}

// caBundle is the cluster CA as $CLUSTER_CA_BUNDLE carries it: base64 PEM.
func caBundle(e *env.Env) string { return base64.StdEncoding.EncodeToString(e.Config.CAData) }

// dumpOnFailure prints the tail of the manager logs when the test failed.
func (s *stack) dumpOnFailure() {
	if !s.t.Failed() {
		return
	}
	for i := 1; i <= s.starts; i++ {
		b, err := os.ReadFile(filepath.Join(s.env.LogDir, fmt.Sprintf("joist-%d.log", i)))
		if err != nil {
			continue
		}
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		s.t.Logf("--- tail of joist-%d.log ---\n%s", i, b)
	}
}
