package deploy

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/joist-dev/joist/hack/chart"
)

// chartRelease is the release the chart tests install: `helm install joist charts/joist -n karpenter`.
const chartRelease, chartNamespace = "joist", "karpenter"

func chartDir(t *testing.T) string { return filepath.Join(repoRoot(t), "charts", "joist") }

// renderChart renders charts/joist for the test release with values over values.yaml, as
// `helm template joist charts/joist -n karpenter --set ...` does.
func renderChart(t *testing.T, values map[string]any) (rendered, *chart.Rendered) {
	t.Helper()
	r, err := chart.Render(chartDir(t), chart.Release{Name: chartRelease, Namespace: chartNamespace, Values: values})
	if err != nil {
		t.Fatalf("rendering charts/joist with %v: %v", values, err)
	}
	return rendered{objs: r.Objects}, r
}

// chartManager is the manager container of the chart's Deployment.
func chartManager(t *testing.T, r rendered) corev1.Container {
	t.Helper()
	var dep appsv1.Deployment
	r.get(t, "Deployment", chartRelease, &dep)
	return containerNamed(t, dep.Spec.Template.Spec, "manager")
}

func (r rendered) count(kind string) int {
	n := 0
	for _, o := range r.objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n
}

// chartValueSets are the value sets the linter and the apiserver dry run go through.
var chartValueSets = map[string]map[string]any{
	"defaults":     nil,
	"eks":          {"settings": map[string]any{"clusterName": "prod", "interruptionQueue": "prod"}, "serviceAccount": map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/joist"}}},
	"cert-manager": {"webhook": map[string]any{"certManager": map[string]any{"enabled": true}}},
	"kwok":         {"cloudProvider": "kwok", "replicas": 1},
	"azure":        {"cloudProvider": "azure", "settings": map[string]any{"clusterName": "aks-prod", "clusterEndpoint": "https://aks-prod.hcp.eastus.azmk8s.io:443"}},
	"no webhooks":  {"webhook": map[string]any{"enabled": false}},
}

// TestChartLint runs Helm's linter (`helm lint`) over charts/joist with each value set: no warning,
// no error. (The only message Helm gives is the INFO that a chart icon is recommended.)
func TestChartLint(t *testing.T) {
	for name, values := range chartValueSets {
		for _, m := range chart.Lint(chartDir(t), chartNamespace, values) {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint (%s): %s", name, m)
			} else {
				t.Logf("helm lint (%s): %s", name, m)
			}
		}
	}
}

// TestChartUpToDate regenerates the chart's crds/ and files/ from config/ and compares them with the
// committed chart: `make manifests` output never drifts from what is committed.
func TestChartUpToDate(t *testing.T) {
	files, err := chart.Generate(filepath.Join(repoRoot(t), "config"))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(chartDir(t), p))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("charts/joist/%s is stale or missing: run `make manifests` and commit", p)
		}
	}
	committed, err := filepath.Glob(filepath.Join(chartDir(t), "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range committed {
		if _, ok := files["crds/"+filepath.Base(p)]; !ok {
			t.Errorf("charts/joist/crds/%s is not generated from config/crd/bases: remove it", filepath.Base(p))
		}
	}
}

// TestChartValues: the values named as Karpenter's chart names them change the rendered objects
// as they do there, and each setting reaches the manager as the flag or variable it reads.
func TestChartValues(t *testing.T) {
	base, _ := renderChart(t, nil)
	var dep appsv1.Deployment
	base.get(t, "Deployment", "joist", &dep)
	if *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("defaults: replicas %d priorityClass %q, want 2 and system-cluster-critical", *dep.Spec.Replicas, dep.Spec.Template.Spec.PriorityClassName)
	}
	if c := containerNamed(t, dep.Spec.Template.Spec, "manager"); c.Image != "ghcr.io/joist-dev/joist:v0.1.0" {
		t.Errorf("default image %s, want the chart's appVersion", c.Image)
	}
	if p, by := selectedProvider(containerNamed(t, dep.Spec.Template.Spec, "manager")); p != "aws" || by != "env" {
		t.Errorf("defaults select %q by %q, want aws through $CLOUD_PROVIDER", p, by)
	}
	if granted := nodeCreateGrants(t, base.objs); len(granted) > 0 {
		t.Errorf("the aws chart grants creating Nodes through %v", granted)
	}

	r, _ := renderChart(t, map[string]any{
		"replicas":          3,
		"priorityClassName": "joist-critical",
		"serviceAccount":    map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/joist"}},
		"controller": map[string]any{
			"resources": map[string]any{"requests": map[string]any{"cpu": "2", "memory": "3Gi"}, "limits": map[string]any{"memory": "3Gi"}},
			"env":       []any{map[string]any{"name": "AWS_REGION", "value": "eu-west-1"}},
			"image":     map[string]any{"digest": "sha256:0123"},
		},
		"podDisruptionBudget": map[string]any{"name": "joist-pdb", "maxUnavailable": 0},
		"nodeSelector":        map[string]any{"node-role/system": "true"},
		"tolerations":         []any{map[string]any{"key": "system", "operator": "Exists", "effect": "NoSchedule"}},
		"affinity":            map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 50, "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname"}}}}},
		"logLevel":            "debug",
		"webhook":             map[string]any{"port": 10250},
		"settings": map[string]any{
			"clusterName": "prod", "clusterEndpoint": "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com", "interruptionQueue": "prod-queue",
			"batchMaxDuration": "20s", "batchIdleDuration": "2s", "isolatedVPC": true,
			"featureGates": map[string]any{"spotToSpotConsolidation": true},
		},
	})
	var sa corev1.ServiceAccount
	r.get(t, "ServiceAccount", "joist", &sa)
	if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/joist" || sa.Namespace != chartNamespace {
		t.Errorf("ServiceAccount %s/%s annotations %v, want the IRSA role annotation", sa.Namespace, sa.Name, sa.Annotations)
	}
	r.get(t, "Deployment", "joist", &dep)
	pod := dep.Spec.Template.Spec
	c := containerNamed(t, pod, "manager")
	if *dep.Spec.Replicas != 3 || pod.PriorityClassName != "joist-critical" || pod.ServiceAccountName != sa.Name {
		t.Errorf("replicas %d priorityClass %q serviceAccount %q", *dep.Spec.Replicas, pod.PriorityClassName, pod.ServiceAccountName)
	}
	if c.Resources.Requests.Cpu().String() != "2" || c.Resources.Limits.Memory().String() != "3Gi" || c.Image != "ghcr.io/joist-dev/joist@sha256:0123" {
		t.Errorf("resources %v image %s", c.Resources, c.Image)
	}
	if pod.NodeSelector["node-role/system"] != "true" || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "system" {
		t.Errorf("nodeSelector %v tolerations %v", pod.NodeSelector, pod.Tolerations)
	}
	anti := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	// Helm merges maps: the given term joins values.yaml's node affinity and required anti-affinity.
	if pod.Affinity.NodeAffinity == nil || len(anti) != 1 || anti[0].Weight != 50 || anti[0].PodAffinityTerm.LabelSelector == nil ||
		anti[0].PodAffinityTerm.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != chartRelease {
		t.Errorf("affinity %+v: want the given anti-affinity term, completed with the pod's selector labels", pod.Affinity)
	}
	for _, want := range []corev1.EnvVar{
		{Name: "CLUSTER_NAME", Value: "prod"}, {Name: "CLUSTER_ENDPOINT", Value: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com"},
		{Name: "INTERRUPTION_QUEUE", Value: "prod-queue"}, {Name: "SPOT_TO_SPOT_CONSOLIDATION", Value: "true"},
		{Name: "ISOLATED_VPC", Value: "true"}, {Name: "AWS_REGION", Value: "eu-west-1"}, {Name: "CLOUD_PROVIDER", Value: "aws"},
	} {
		if !containsEnv(c.Env, want) {
			t.Errorf("manager env lacks %s=%s: %v", want.Name, want.Value, c.Env)
		}
	}
	if !memoryLimitFromContainer(c) {
		t.Errorf("MEMORY_LIMIT does not come from the manager's resources.limits.memory: %v", c.Env)
	}
	for _, want := range []string{"--batch-max-duration=20s", "--batch-idle-duration=2s", "--zap-log-level=debug", "--webhook-port=10250"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("manager args %v lack %s", c.Args, want)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "https-webhook" && p.ContainerPort == 10250 }) {
		t.Errorf("ports %v: the webhook port is not 10250", c.Ports)
	}
	var pdb policyv1.PodDisruptionBudget
	r.get(t, "PodDisruptionBudget", "joist-pdb", &pdb)
	if pdb.Spec.MaxUnavailable.IntValue() != 0 {
		t.Errorf("PDB maxUnavailable %v, want 0", pdb.Spec.MaxUnavailable)
	}

	// An existing ServiceAccount (e.g. made by eksctl for IRSA): none created, everything bound to it.
	r, _ = renderChart(t, map[string]any{"serviceAccount": map[string]any{"create": false, "name": "karpenter"}})
	if r.count("ServiceAccount") != 0 {
		t.Error("serviceAccount.create=false still creates a ServiceAccount")
	}
	r.get(t, "Deployment", "joist", &dep)
	if dep.Spec.Template.Spec.ServiceAccountName != "karpenter" {
		t.Errorf("manager runs as %q, want karpenter", dep.Spec.Template.Spec.ServiceAccountName)
	}
	for _, o := range r.objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.ClusterRoleBinding // a RoleBinding's subjects decode the same way
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Subjects) != 1 || b.Subjects[0].Name != "karpenter" || b.Subjects[0].Namespace != chartNamespace {
			t.Errorf("%s %s binds %v, want ServiceAccount karpenter/%s", o.GetKind(), o.GetName(), b.Subjects, chartNamespace)
		}
	}

	// The KWOK provider: selected, and granted creating Nodes through its own ClusterRole only.
	r, _ = renderChart(t, map[string]any{"cloudProvider": "kwok"})
	if p, _ := selectedProvider(chartManager(t, r)); p != "kwok" {
		t.Errorf("cloudProvider=kwok selects %q", p)
	}
	if granted := nodeCreateGrants(t, r.objs); !slices.Equal(granted, []string{"ClusterRole joist-kwok-node-creator"}) {
		t.Errorf("the kwok chart grants creating Nodes through %v, want joist-kwok-node-creator only", granted)
	}

	// Webhooks off: no configurations, no certificate, and the manager does not serve them.
	r, _ = renderChart(t, map[string]any{"webhook": map[string]any{"enabled": false}})
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret", "Certificate"} {
		if r.count(kind) != 0 {
			t.Errorf("webhook.enabled=false still renders a %s", kind)
		}
	}
	if c := chartManager(t, r); !slices.Contains(c.Args, "--enable-webhooks=false") || len(c.VolumeMounts) != 0 {
		t.Errorf("webhook.enabled=false: args %v mounts %v", c.Args, c.VolumeMounts)
	}

	// Karpenter's feature gates Joist lacks are refused, naming the gate, rather than dropped; values
	// of the wrong type or form are refused by values.schema.json, naming the value.
	for values, want := range map[string]map[string]any{
		"settings.featureGates.nodeRepair": {"settings": map[string]any{"featureGates": map[string]any{"nodeRepair": true}}},
		"cloudProvider":                    {"cloudProvider": "gcp"},
		"replicas":                         {"replicas": "two"},
		"clusterEndpoint":                  {"settings": map[string]any{"clusterEndpoint": "ABCDEF.eks.amazonaws.com"}},
		"batchMaxDuration":                 {"settings": map[string]any{"batchMaxDuration": "10 seconds"}},
	} {
		_, err := chart.Render(chartDir(t), chart.Release{Name: chartRelease, Namespace: chartNamespace, Values: want})
		if err == nil || !strings.Contains(err.Error(), values) {
			t.Errorf("rendering with %v: err = %v, want one naming %s", want, err, values)
		}
	}
}

// TestChartCertificates: by default the chart generates a CA and a serving certificate for the
// webhook Service's DNS names, mounts it in the manager and puts the CA in every webhook's
// caBundle; with webhook.certManager.enabled it renders cert-manager's Issuer and Certificate
// (decoded with cert-manager's types) and asks cainjector for the CA instead.
func TestChartCertificates(t *testing.T) {
	r, _ := renderChart(t, nil)
	var secret corev1.Secret
	r.get(t, "Secret", "joist-webhook-cert", &secret)
	var dep appsv1.Deployment
	r.get(t, "Deployment", "joist", &dep)
	if v := dep.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != secret.Name {
		t.Errorf("manager volumes %+v, want the webhook certificate Secret %s", v, secret.Name)
	}
	var svc corev1.Service
	r.get(t, "Service", "joist-webhook", &svc)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatal("the Secret's ca.crt is not a PEM certificate")
	}
	block, _ := pem.Decode(secret.Data["tls.crt"])
	if block == nil {
		t.Fatal("the Secret's tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("the serving certificate does not verify for %s against the CA: %v", host, err)
		}
	}
	ca := base64.StdEncoding.EncodeToString(secret.Data["ca.crt"])
	hooks := 0
	for _, w := range chartWebhooks(t, r) {
		hooks++
		cc := w.ClientConfig
		if string(cc.CABundle) != string(secret.Data["ca.crt"]) {
			t.Errorf("webhook %s caBundle is not the Secret's CA (%d bytes, want %s…)", w.Name, len(cc.CABundle), ca[:16])
		}
		if cc.Service == nil || cc.Service.Name != svc.Name || cc.Service.Namespace != svc.Namespace || *cc.Service.Port != 443 {
			t.Errorf("webhook %s calls %+v, want %s/%s:443", w.Name, cc.Service, svc.Namespace, svc.Name)
		}
	}
	if hooks != 6 {
		t.Errorf("%d webhooks, want config/webhook's 6", hooks)
	}

	r, _ = renderChart(t, map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": true}}})
	if r.count("Secret") != 0 {
		t.Error("with cert-manager the chart still generates the certificate Secret")
	}
	var c certmanagerv1.Certificate
	r.get(t, "Certificate", "joist-serving-cert", &c)
	var issuer certmanagerv1.Issuer
	r.get(t, "Issuer", c.Spec.IssuerRef.Name, &issuer)
	if issuer.Spec.SelfSigned == nil || c.Spec.SecretName != "joist-webhook-cert" ||
		!slices.Equal(c.Spec.DNSNames, []string{"joist-webhook.karpenter.svc", "joist-webhook.karpenter.svc.cluster.local"}) {
		t.Errorf("certificate %+v issuer %+v", c.Spec, issuer.Spec)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range r.objs {
			if o.GetKind() == kind && o.GetAnnotations()["cert-manager.io/inject-ca-from"] != "karpenter/joist-serving-cert" {
				t.Errorf("%s inject-ca-from = %q", kind, o.GetAnnotations()["cert-manager.io/inject-ca-from"])
			}
		}
	}
	for _, w := range chartWebhooks(t, r) {
		if len(w.ClientConfig.CABundle) != 0 {
			t.Errorf("with cert-manager webhook %s carries a caBundle of its own", w.Name)
		}
	}
	r, _ = renderChart(t, map[string]any{"webhook": map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"kind": "ClusterIssuer", "name": "corp-ca"}}}})
	r.get(t, "Certificate", "joist-serving-cert", &c)
	if r.count("Issuer") != 0 || c.Spec.IssuerRef.Kind != "ClusterIssuer" || c.Spec.IssuerRef.Name != "corp-ca" {
		t.Errorf("issuerRef %+v with %d Issuers, want the given ClusterIssuer and none created", c.Spec.IssuerRef, r.count("Issuer"))
	}
}

// webhook is the part of a mutating or validating webhook the tests compare.
type webhook struct {
	Name         string
	ClientConfig admissionregistrationv1.WebhookClientConfig
}

func chartWebhooks(t *testing.T, r rendered) []webhook {
	t.Helper()
	var out []webhook
	for _, o := range r.objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			r.get(t, o.GetKind(), o.GetName(), &c)
			for _, w := range c.Webhooks {
				out = append(out, webhook{w.Name, w.ClientConfig})
			}
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			r.get(t, o.GetKind(), o.GetName(), &c)
			for _, w := range c.Webhooks {
				out = append(out, webhook{w.Name, w.ClientConfig})
			}
		}
	}
	return out
}
