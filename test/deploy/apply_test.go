package deploy

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/test/env"
)

// certManagerCRDs are cert-manager's Certificate and Issuer CRDs from its Go module, so that the
// apiserver validates config/certmanager's objects against cert-manager's real schema.
func certManagerCRDs(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		t.Fatalf("locating the cert-manager module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	return []string{filepath.Join(dir, "cert-manager.io_certificates.yaml"), filepath.Join(dir, "cert-manager.io_issuers.yaml")}
}

// TestDefaultAppliesToAPIServer renders config/default and applies it to a real kube-apiserver with
// server-side apply: the Namespace for real, everything else as a server-side dry run (admission,
// schema and CEL validation run; nothing is persisted, so the fail-closed webhooks do not block the
// apiserver). Only the ServiceMonitor, whose CRD the test apiserver lacks, is skipped.
func TestDefaultAppliesToAPIServer(t *testing.T) {
	root := repoRoot(t)
	r := renderDefault(t)
	e := env.New(t, env.Options{CRDDirectoryPaths: append([]string{filepath.Join(root, "config", "crd", "bases")}, certManagerCRDs(t)...)})
	applied := applyDryRun(t, e, r.objs)
	for _, kind := range []string{"CustomResourceDefinition", "Deployment", "PodDisruptionBudget", "Service", "ClusterRole", "Role",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Certificate", "Issuer", "NetworkPolicy"} {
		if applied[kind] == 0 {
			t.Errorf("no %s applied", kind)
		}
	}
	t.Logf("applied: %v", applied)
}

// applyDryRun applies objs to the apiserver with server-side apply: Namespaces for real, everything
// else as a server-side dry run (admission, schema and CEL validation run; nothing is persisted, so
// fail-closed webhooks do not block the apiserver). Only a ServiceMonitor, whose CRD the test
// apiserver lacks, is skipped. It returns how many objects of each kind were applied.
func applyDryRun(t *testing.T, e *env.Env, objs []*unstructured.Unstructured) map[string]int {
	t.Helper()
	ctx := context.Background()
	applied := map[string]int{}
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		if err := e.Client.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner("joist-test"), client.ForceOwnership); err != nil {
			t.Fatalf("applying Namespace %s: %v", o.GetName(), err)
		}
		applied["Namespace"]++
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		obj := o.DeepCopy()
		err := e.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("joist-test"), client.ForceOwnership, client.DryRunAll)
		if meta.IsNoMatchError(err) && o.GetKind() == "ServiceMonitor" {
			t.Logf("skipping %s %s: no %s CRD in the test apiserver", o.GetKind(), o.GetName(), o.GetAPIVersion())
			continue
		}
		if err != nil {
			t.Errorf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
			continue
		}
		applied[o.GetKind()]++
	}
	return applied
}
