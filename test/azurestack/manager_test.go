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
	os.Exit(env.RunWithManagerBinary(m, &joistBinary))
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
	manager *env.Manager
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
	t.Cleanup(func() { s.kill(); arm.Close() }) // env.New prints the tail of joist-<n>.log on failure
	return s
}

// start runs a fresh manager process selecting the azure provider, with only the environment an
// install gives it (nothing of the test's own), logging to joist-<n>.log in the environment's log folder.
func (s *stack) start() {
	s.t.Helper()
	s.starts++
	m, err := s.env.StartManager(env.ManagerOptions{
		Binary: joistBinary, LogName: fmt.Sprintf("joist-%d.log", s.starts),
		Args: []string{"--cloud-provider=azure", "--azure-endpoint=" + s.arm.URL()},
		Environment: append([]string{
			"HOME=" + s.t.TempDir(), "PATH=" + os.Getenv("PATH"),
			"ARM_SUBSCRIPTION_ID=" + fake.Subscription, "LOCATION=" + fake.Location,
			"AZURE_NODE_RESOURCE_GROUP=" + fake.ResourceGroup, "VNET_SUBNET_ID=" + fake.SubnetID,
			"CLUSTER_NAME=" + clusterName, "CLUSTER_ENDPOINT=" + clusterEndpoint, "CLUSTER_CA_BUNDLE=" + caBundle(s.env),
			"KUBELET_BOOTSTRAP_TOKEN=" + bootstrapToken, "SSH_PUBLIC_KEY=" + sshKey, "DNS_SERVICE_IP=" + dnsServiceIP,
		}, s.arm.ManagedIdentityEnv()...),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.manager = m
}

// kill SIGKILLs the manager: no shutdown hooks, as in a node failure or an OOM kill.
func (s *stack) kill() {
	if s.manager == nil {
		return
	}
	s.manager.Kill()
	s.manager = nil
}

// caBundle is the cluster CA as $CLUSTER_CA_BUNDLE carries it: base64 PEM.
func caBundle(e *env.Env) string { return base64.StdEncoding.EncodeToString(e.Config.CAData) }
