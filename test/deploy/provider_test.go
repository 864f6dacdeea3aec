package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/joist-dev/joist/hack/bundle"
	"github.com/joist-dev/joist/test/env"
)

// eksEnv is what docs/aws.md has an EKS install set, through a kustomize patch or the
// Subscription's spec.config.env.
var eksEnv = []corev1.EnvVar{
	{Name: "CLUSTER_NAME", Value: "prod"},
	{Name: "CLUSTER_ENDPOINT", Value: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com"},
	{Name: "AWS_REGION", Value: "us-west-2"},
	{Name: "INTERRUPTION_QUEUE", Value: "joist-prod"},
}

// eksOverlay is docs/aws.md's kustomize overlay of config/default.
const eksOverlay = `resources:
- %s
patches:
- target:
    kind: Deployment
    name: joist-controller-manager
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: joist-controller-manager
    spec:
      template:
        spec:
          containers:
          - name: manager
            env:
            - {name: CLUSTER_NAME, value: prod}
            - {name: CLUSTER_ENDPOINT, value: https://ABCDEF.gr7.us-west-2.eks.amazonaws.com}
            - {name: AWS_REGION, value: us-west-2}
            - {name: INTERRUPTION_QUEUE, value: joist-prod}
`

// managerContainer is the manager container of a rendered install's Deployment.
func managerContainer(t *testing.T, r rendered) corev1.Container {
	t.Helper()
	var dep appsv1.Deployment
	r.get(t, "Deployment", "joist-controller-manager", &dep)
	return containerNamed(t, dep.Spec.Template.Spec, "manager")
}

func containerNamed(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range pod.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s container in %+v", name, pod.Containers)
	return corev1.Container{}
}

// selectedProvider reads the provider a container selects as cmd/joist does: the flag wins over
// $CLOUD_PROVIDER; neither means the binary's default.
func selectedProvider(c corev1.Container) (provider, by string) {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--cloud-provider="); ok {
			provider, by = v, "flag"
		}
	}
	if by != "" {
		return provider, by
	}
	for _, e := range c.Env {
		if e.Name == "CLOUD_PROVIDER" && e.Value != "" {
			provider, by = e.Value, "env"
		}
	}
	return provider, by
}

// mergeSubscriptionEnv applies a Subscription's spec.config.env as OLM does: a variable replaces the
// container's variable of the same name, others are appended.
func mergeSubscriptionEnv(c corev1.Container, env []corev1.EnvVar) corev1.Container {
	c = *c.DeepCopy()
	for _, e := range env {
		replaced := false
		for i := range c.Env {
			if c.Env[i].Name == e.Name {
				c.Env[i], replaced = e, true
			}
		}
		if !replaced {
			c.Env = append(c.Env, e)
		}
	}
	return c
}

// startManager runs the joist binary with the container's arguments and literal environment (and
// nothing of the test's own environment) against no cluster; what it printed before it stopped tells
// which provider it chose and whether its settings passed.
func startManager(t *testing.T, binary string, c corev1.Container) string {
	t.Helper()
	cmd := exec.Command(binary, c.Args...)
	cmd.Env = []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none"), "HOME=" + t.TempDir()}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the manager started without a cluster:\n%s", out)
	}
	return string(out)
}

// buildManager is $JOIST_BINARY (make test builds it once), or ./cmd/joist built into a temporary folder.
func buildManager(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("JOIST_BINARY"); b != "" {
		return b
	}
	binary, err := env.BuildManager(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return binary
}

// TestInstallsSelectTheirProvider: config/default and the OLM bundle select the aws provider through
// $CLOUD_PROVIDER, config/kwok selects kwok. The real binary, started as each install renders it,
// agrees: config/default alone stops at once naming CLUSTER_NAME and CLUSTER_ENDPOINT; with docs/aws.md's
// kustomize patch, or with its Subscription env merged into the CSV's Deployment as OLM merges it,
// the aws settings pass and the manager goes on to look for its cluster. So does the Helm chart with
// settings.clusterName and the other settings (every flag it renders parses).
func TestInstallsSelectTheirProvider(t *testing.T) {
	root := repoRoot(t)
	base := managerContainer(t, renderDefault(t))
	kwok := managerContainer(t, rendered{objs: render(t, "kwok")})
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	deployments := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deployments) != 1 {
		t.Fatalf("the CSV has %d deployments, want 1", len(deployments))
	}
	olm := containerNamed(t, deployments[0].Spec.Template.Spec, "manager")
	overlay := t.TempDir()
	defaultDir, err := filepath.Rel(overlay, filepath.Join(root, "config", "default")) // kustomize refuses absolute bases
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(strings.Replace(eksOverlay, "%s", defaultDir, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := bundle.Render(overlay)
	if err != nil {
		t.Fatal(err)
	}
	eks := managerContainer(t, rendered{objs: objs})

	for _, tc := range []struct {
		name string
		c    corev1.Container
		want string
	}{
		{"config/default", base, "aws"},
		{"the bundle's CSV", olm, "aws"},
		{"config/kwok", kwok, "kwok"},
		{"config/default with docs/aws.md's patch", eks, "aws"},
	} {
		provider, by := selectedProvider(tc.c)
		if provider != tc.want || by != "env" {
			t.Errorf("%s selects %q by %q, want %q through $CLOUD_PROVIDER", tc.name, provider, by, tc.want)
		}
	}
	for _, e := range eksEnv {
		if !containsEnv(eks.Env, e) {
			t.Errorf("docs/aws.md's patch does not set %s=%s: %+v", e.Name, e.Value, eks.Env)
		}
	}
	if !strings.Contains(b.CSV.Spec.Description, "CLUSTER_NAME") || !strings.Contains(b.CSV.Spec.Description, "spec.config.env") {
		t.Error("the CSV's description does not tell OLM users to set CLUSTER_NAME through the Subscription's spec.config.env")
	}

	binary := buildManager(t)
	out := startManager(t, binary, base)
	for _, want := range []string{"selected by $CLOUD_PROVIDER=aws", "$CLUSTER_NAME (--aws-cluster-name)", "spec.config.env"} {
		if !strings.Contains(out, want) {
			t.Errorf("config/default without the cluster: output does not name %q:\n%s", want, out)
		}
	}
	helm, _ := renderChart(t, map[string]any{
		"settings":   map[string]any{"clusterName": "prod", "clusterEndpoint": "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com", "interruptionQueue": "joist-prod"},
		"controller": map[string]any{"env": []any{map[string]any{"name": "AWS_REGION", "value": "us-west-2"}}},
		"logLevel":   "debug",
	})
	for name, c := range map[string]corev1.Container{
		"the Helm chart with settings.clusterName":    chartManager(t, helm),
		"the CSV with docs/aws.md's Subscription env": mergeSubscriptionEnv(olm, eksEnv),
		"config/default with docs/aws.md's patch":     eks,
		"config/kwok": kwok,
	} {
		provider, _ := selectedProvider(c)
		out := startManager(t, binary, c)
		if !strings.Contains(out, `"cloudProvider":"`+provider+`","selectedBy":"$CLOUD_PROVIDER=`+provider+`"`) || !strings.Contains(out, "loading kubeconfig") {
			t.Errorf("%s: want the manager to select %s through $CLOUD_PROVIDER, pass its settings and look for a cluster:\n%s", name, provider, out)
		}
	}
}

func containsEnv(env []corev1.EnvVar, want corev1.EnvVar) bool {
	for _, e := range env {
		if e.Name == want.Name && e.Value == want.Value {
			return true
		}
	}
	return false
}

// memoryLimitFromContainer reports whether the container's MEMORY_LIMIT is its own
// resources.limits.memory in bytes (the downward API), which the manager's soft memory limit reads.
func memoryLimitFromContainer(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == "MEMORY_LIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
			r := e.ValueFrom.ResourceFieldRef
			return r.Resource == "limits.memory" && r.ContainerName == c.Name && (r.Divisor.IsZero() || r.Divisor.Value() == 1)
		}
	}
	return false
}
