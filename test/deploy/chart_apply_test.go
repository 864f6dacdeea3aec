package deploy

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/hack/chart"
	"github.com/joist-dev/joist/test/env"
)

// TestChartAppliesToAPIServer installs the chart as `helm install joist charts/joist -n karpenter
// --create-namespace` would on a real kube-apiserver: its crds/ for real (as Helm installs them
// first), the namespace for real, and every template's objects, for each value set, as a server-side
// dry run (schema, CEL and admission run, nothing persists). The generated webhook certificate's
// Secret is then applied for real, and a second render that reads the apiserver (helm upgrade's
// lookup) keeps its CA and certificate instead of generating new ones.
func TestChartAppliesToAPIServer(t *testing.T) {
	e := env.New(t, env.Options{CRDDirectoryPaths: append([]string{filepath.Join(chartDir(t), "crds")}, certManagerCRDs(t)...)})
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}); err != nil {
		t.Fatal(err)
	}
	for name, values := range chartValueSets {
		r, _ := renderChart(t, values)
		applied := applyDryRun(t, e, r.objs)
		want := []string{"Deployment", "PodDisruptionBudget", "Service", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
		switch name {
		case "cert-manager":
			want = append(want, "Certificate", "Issuer", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
		case "no webhooks":
		default:
			want = append(want, "Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
		}
		for _, kind := range want {
			if applied[kind] == 0 {
				t.Errorf("%s: no %s applied", name, kind)
			}
		}
		t.Logf("%s: applied %v", name, applied)
	}

	first, _ := renderChart(t, nil)
	var secret corev1.Secret
	first.get(t, "Secret", "joist-webhook-cert", &secret)
	for _, o := range first.objs {
		if o.GetKind() == "Secret" {
			if err := e.Client.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner("helm"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
		}
	}
	upgrade, err := chart.Render(chartDir(t), chart.Release{Name: chartRelease, Namespace: chartNamespace, Config: e.Config})
	if err != nil {
		t.Fatal(err)
	}
	var kept corev1.Secret
	rendered{objs: upgrade.Objects}.get(t, "Secret", "joist-webhook-cert", &kept)
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if string(kept.Data[key]) != string(secret.Data[key]) {
			t.Errorf("an upgrade regenerates %s of the installed webhook certificate", key)
		}
	}
	fresh, _ := renderChart(t, nil)
	var other corev1.Secret
	fresh.get(t, "Secret", "joist-webhook-cert", &other)
	if string(other.Data["ca.crt"]) == string(secret.Data["ca.crt"]) {
		t.Error("two renders without a cluster give the same CA: the lookup check proves nothing")
	}
}
