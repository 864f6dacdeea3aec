package azurestack

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/hack/bundle"
	"github.com/joist-dev/joist/test/env"
)

// rendered is a kustomize build's objects.
type rendered []*unstructured.Unstructured

// get decodes the one object of kind whose name matches (a generated object's name carries a hash
// suffix: prefix match).
func (r rendered) get(t *testing.T, kind, namePrefix string, into any) {
	t.Helper()
	for _, o := range r {
		if o.GetKind() == kind && strings.HasPrefix(o.GetName(), namePrefix) {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
				t.Fatalf("decoding %s %s: %v", kind, o.GetName(), err)
			}
			return
		}
	}
	t.Fatalf("the build renders no %s %s*", kind, namePrefix)
}

func (r rendered) manager(t *testing.T) (appsv1.Deployment, corev1.Container) {
	t.Helper()
	var dep appsv1.Deployment
	r.get(t, "Deployment", "joist-controller-manager", &dep)
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return dep, c
		}
	}
	t.Fatal("no manager container")
	return dep, corev1.Container{}
}

// environment resolves the container's environment as the kubelet would from the rendered
// ConfigMaps and Secrets (envFrom and valueFrom references).
func (r rendered) environment(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	configMaps, secrets := map[string]map[string]string{}, map[string]map[string]string{}
	for _, o := range r {
		switch o.GetKind() {
		case "ConfigMap":
			var cm corev1.ConfigMap
			r.get(t, "ConfigMap", o.GetName(), &cm)
			configMaps[cm.Name] = cm.Data
		case "Secret":
			var s corev1.Secret
			r.get(t, "Secret", o.GetName(), &s)
			secrets[s.Name] = map[string]string{}
			for k, v := range s.Data {
				secrets[s.Name][k] = string(v)
			}
		}
	}
	out := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		data, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			t.Fatalf("envFrom names ConfigMap %s, which the build does not render", from.ConfigMapRef.Name)
		}
		for k, v := range data {
			out[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, ok := secrets[ref.Name][ref.Key]
			if !ok {
				t.Fatalf("%s refers to key %s of Secret %s, which the build does not render", e.Name, ref.Key, ref.Name)
			}
			out[e.Name] = v
		}
	}
	return out
}

// runManager starts the joist binary with exactly this environment against no cluster; what it
// printed before it stopped tells which provider it chose and whether its settings passed.
func runManager(t *testing.T, environment map[string]string) string {
	t.Helper()
	cmd := exec.Command(joistBinary)
	cmd.Env = []string{"KUBECONFIG=" + filepath.Join(t.TempDir(), "none"), "HOME=" + t.TempDir()}
	for k, v := range environment {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the manager started without a cluster:\n%s", out)
	}
	return string(out)
}

// docBlock is the first ```yaml block after the heading in docs/azure.md.
func docBlock(t *testing.T, heading string) string {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "azure.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/azure.md has no heading %q", heading)
	}
	_, block, ok := strings.Cut(after, "```yaml\n")
	if !ok {
		t.Fatalf("docs/azure.md has no yaml block after %q", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

const passed = `"cloudProvider":"azure","selectedBy":"$CLOUD_PROVIDER=azure"`

var missingVar = regexp.MustCompile(`\$([A-Z_]+) \(--azure-`)

// TestAzureInstallRendersAppliesAndConfiguresTheManager: config/azure and docs/azure.md's overlay of it
// render with the kustomize API and server-side (dry-run) apply to a real apiserver; config/azure
// selects azure, carries the workload identity label and annotation, and alone stops the binary
// naming each missing variable, each of which its ConfigMap or Secret carries; with the overlay,
// and with docs/azure.md's Subscription env merged into the bundle's CSV as OLM merges it, the
// settings pass and the manager goes on to look for its cluster.
func TestAzureInstallRendersAppliesAndConfiguresTheManager(t *testing.T) {
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	base, err := bundle.Render(filepath.Join(root, "config", "azure"))
	if err != nil {
		t.Fatal(err)
	}
	r := rendered(base)
	dep, c := r.manager(t)
	if got := dep.Spec.Template.Labels["azure.workload.identity/use"]; got != "true" {
		t.Errorf("pod label azure.workload.identity/use = %q, want \"true\"", got)
	}
	var sa corev1.ServiceAccount
	r.get(t, "ServiceAccount", dep.Spec.Template.Spec.ServiceAccountName, &sa)
	if _, ok := sa.Annotations["azure.workload.identity/client-id"]; !ok {
		t.Errorf("ServiceAccount %s lacks the azure.workload.identity/client-id annotation: %v", sa.Name, sa.Annotations)
	}
	providers := 0
	for _, e := range c.Env {
		if e.Name == "CLOUD_PROVIDER" {
			providers++
		}
	}
	environment := r.environment(t, c)
	if providers != 1 || environment["CLOUD_PROVIDER"] != "azure" {
		t.Errorf("CLOUD_PROVIDER set %d times, to %q; want once, azure", providers, environment["CLOUD_PROVIDER"])
	}
	var crd unstructured.Unstructured
	r.get(t, "CustomResourceDefinition", "aksnodeclasses.karpenter.azure.com", &crd.Object)
	var role rbacv1.ClusterRole
	r.get(t, "ClusterRole", "joist-manager-role", &role)
	if !grants(role, "karpenter.azure.com", "aksnodeclasses/status") {
		t.Errorf("the manager's ClusterRole does not grant aksnodeclasses/status: %+v", role.Rules)
	}

	out := runManager(t, environment)
	missing := missingVar.FindAllStringSubmatch(out, -1)
	if !strings.Contains(out, "selected by $CLOUD_PROVIDER=azure") || len(missing) == 0 {
		t.Fatalf("config/azure as is: want the manager to select azure and name the missing settings:\n%s", out)
	}
	for _, m := range missing {
		if _, ok := environment[m[1]]; !ok {
			t.Errorf("the manager needs $%s, which config/azure's ConfigMap and Secret do not carry", m[1])
		}
	}

	// docs/azure.md's overlay, its resource pointed at this checkout's config/azure.
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, filepath.Join(root, "config", "azure")) // kustomize refuses absolute bases
	if err != nil {
		t.Fatal(err)
	}
	kustomization := regexp.MustCompile(`(?m)^- github.com/joist-dev/joist/config/azure.*$`).ReplaceAllString(docBlock(t, "### Install with kustomize (`config/azure`)"), "- "+rel)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := bundle.Render(overlay)
	if err != nil {
		t.Fatalf("docs/azure.md's overlay: %v", err)
	}
	filled := rendered(objs)
	_, fc := filled.manager(t)
	filledEnv := filled.environment(t, fc)
	if out := runManager(t, filledEnv); !strings.Contains(out, passed) || !strings.Contains(out, "loading kubeconfig") {
		t.Errorf("config/azure with docs/azure.md's overlay: want the settings to pass and the manager to look for its cluster:\n%s", out)
	}
	filled.get(t, "ServiceAccount", "joist-controller-manager", &sa)
	if sa.Annotations["azure.workload.identity/client-id"] == "" {
		t.Errorf("the overlay leaves the workload identity client ID empty: %v", sa.Annotations)
	}

	// OLM: the CSV's manager container with the Subscription's literal env merged by name.
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	var sub struct {
		Spec struct {
			Config struct {
				Env []corev1.EnvVar `json:"env"`
			} `json:"config"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(docBlock(t, "### Install with OLM")), &sub); err != nil {
		t.Fatal(err)
	}
	if len(sub.Spec.Config.Env) == 0 {
		t.Fatal("docs/azure.md's Subscription sets no spec.config.env")
	}
	olm := map[string]string{}
	for _, d := range b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					olm[e.Name] = e.Value
				}
			}
		}
	}
	for _, e := range sub.Spec.Config.Env {
		if e.ValueFrom == nil {
			olm[e.Name] = e.Value
		} else if e.ValueFrom.SecretKeyRef != nil {
			olm[e.Name] = "abcdef.0123456789abcdef" // the Secret the document has the user create
		}
	}
	if out := runManager(t, olm); !strings.Contains(out, passed) || !strings.Contains(out, "loading kubeconfig") {
		t.Errorf("the CSV with docs/azure.md's Subscription env: want the settings to pass:\n%s", out)
	}

	applyDryRun(t, filled)
}

func grants(role rbacv1.ClusterRole, group, resource string) bool {
	for _, rule := range role.Rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				if g == group && res == resource {
					return true
				}
			}
		}
	}
	return false
}

// applyDryRun server-side applies the build to a real apiserver: the Namespace for real, everything
// else as a dry run (admission, schema and CEL run; nothing persists). Only the ServiceMonitor,
// whose CRD the test apiserver lacks, is skipped.
func applyDryRun(t *testing.T, r rendered) {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("locating the cert-manager module: %v", err)
	}
	certManager := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	e := env.New(t, env.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases"),
		filepath.Join(certManager, "cert-manager.io_certificates.yaml"), filepath.Join(certManager, "cert-manager.io_issuers.yaml")}})
	ctx := context.Background()
	applied := map[string]int{}
	for _, namespaces := range []bool{true, false} {
		for _, o := range r {
			if (o.GetKind() == "Namespace") != namespaces {
				continue
			}
			opts := []client.PatchOption{client.FieldOwner("joist-test"), client.ForceOwnership}
			if !namespaces {
				opts = append(opts, client.DryRunAll)
			}
			err := e.Client.Patch(ctx, o.DeepCopy(), client.Apply, opts...)
			if meta.IsNoMatchError(err) && o.GetKind() == "ServiceMonitor" {
				continue
			}
			if err != nil {
				t.Errorf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
				continue
			}
			applied[o.GetKind()]++
		}
	}
	for _, kind := range []string{"Namespace", "CustomResourceDefinition", "Deployment", "ServiceAccount", "ConfigMap", "Secret", "ClusterRole"} {
		if applied[kind] == 0 {
			t.Errorf("no %s applied", kind)
		}
	}
}
