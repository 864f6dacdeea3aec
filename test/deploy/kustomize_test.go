package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/joist-dev/joist/hack/bundle"
)

// rendered is config/default after kustomize, by kind and name.
type rendered struct {
	objs []*unstructured.Unstructured
}

func renderDefault(t *testing.T) rendered {
	t.Helper()
	objs, err := bundle.Render(filepath.Join(repoRoot(t), "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	return rendered{objs: objs}
}

// get decodes the one object of kind and name into into.
func (r rendered) get(t *testing.T, kind, name string, into any) {
	t.Helper()
	for _, o := range r.objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
				t.Fatalf("decoding %s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("config/default renders no %s %s", kind, name)
}

// TestCertManagerWiring decodes config/certmanager's objects with cert-manager's Go types and checks
// that the Certificate names the webhook Service, its Secret is what the manager mounts, its Issuer
// exists, and both webhook configurations ask cainjector for its CA.
func TestCertManagerWiring(t *testing.T) {
	r := renderDefault(t)
	var cert certmanagerv1.Certificate
	r.get(t, "Certificate", "joist-serving-cert", &cert)
	var issuer certmanagerv1.Issuer
	r.get(t, "Issuer", cert.Spec.IssuerRef.Name, &issuer)
	if issuer.Spec.SelfSigned == nil {
		t.Errorf("issuer %s is not self-signed", issuer.Name)
	}
	var svc corev1.Service
	r.get(t, "Service", "joist-webhook-service", &svc)
	want := []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"}
	if strings.Join(cert.Spec.DNSNames, ",") != strings.Join(want, ",") {
		t.Errorf("certificate dnsNames = %v, want %v", cert.Spec.DNSNames, want)
	}
	if cert.Namespace != svc.Namespace {
		t.Errorf("certificate in %s, webhook service in %s", cert.Namespace, svc.Namespace)
	}
	var dep appsv1.Deployment
	r.get(t, "Deployment", "joist-controller-manager", &dep)
	mounted := ""
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted = v.Secret.SecretName
		}
	}
	if mounted != cert.Spec.SecretName {
		t.Errorf("manager mounts secret %q, certificate writes %q", mounted, cert.Spec.SecretName)
	}
	inject := cert.Namespace + "/" + cert.Name
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	r.get(t, "MutatingWebhookConfiguration", "joist-mutating-webhook-configuration", &mwc)
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	r.get(t, "ValidatingWebhookConfiguration", "joist-validating-webhook-configuration", &vwc)
	for name, ann := range map[string]map[string]string{mwc.Name: mwc.Annotations, vwc.Name: vwc.Annotations} {
		if ann["cert-manager.io/inject-ca-from"] != inject {
			t.Errorf("%s inject-ca-from = %q, want %q", name, ann["cert-manager.io/inject-ca-from"], inject)
		}
	}
	for _, w := range mwc.Webhooks {
		if w.ClientConfig.Service.Name != svc.Name || w.ClientConfig.Service.Namespace != svc.Namespace {
			t.Errorf("webhook %s calls %s/%s, want %s/%s", w.Name, w.ClientConfig.Service.Namespace, w.ClientConfig.Service.Name, svc.Namespace, svc.Name)
		}
	}
}

// TestManagerDeployment checks the hardening config/default promises.
func TestManagerDeployment(t *testing.T) {
	r := renderDefault(t)
	var dep appsv1.Deployment
	r.get(t, "Deployment", "joist-controller-manager", &dep)
	pod := dep.Spec.Template.Spec
	if *dep.Spec.Replicas != 2 || pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("replicas %d priorityClass %q", *dep.Spec.Replicas, pod.PriorityClassName)
	}
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod is not runAsNonRoot with seccomp RuntimeDefault")
	}
	c := pod.Containers[0]
	if !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
		t.Error("container is not read-only, no-escalation, all capabilities dropped")
	}
	if _, limited := c.Resources.Limits[corev1.ResourceCPU]; limited {
		t.Error("manager has a cpu limit: it throttles a solve")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("manager needs a cpu request and a memory limit")
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds <= 25 {
		t.Errorf("terminationGracePeriodSeconds %v must exceed the manager's 25 s graceful shutdown", pod.TerminationGracePeriodSeconds)
	}
	term := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if term.Key != "karpenter.sh/nodepool" || term.Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("node affinity %v does not keep the manager off Joist nodes", term)
	}
	if pod.Affinity.PodAntiAffinity == nil {
		t.Error("no anti-affinity between replicas")
	}
	if c.Image != "ghcr.io/joist-dev/joist:v0.1.0" {
		t.Errorf("image %s", c.Image)
	}
	var env string
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env != "metadata.namespace" {
		t.Error("POD_NAMESPACE does not come from the downward API")
	}
	if !memoryLimitFromContainer(c) {
		t.Errorf("MEMORY_LIMIT does not come from the manager's resources.limits.memory: %v", c.Env)
	}
	// The pod webhooks exclude the namespace the manager is installed in.
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	r.get(t, "MutatingWebhookConfiguration", "joist-mutating-webhook-configuration", &mwc)
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	r.get(t, "ValidatingWebhookConfiguration", "joist-validating-webhook-configuration", &vwc)
	selectors := map[string]any{}
	for _, w := range mwc.Webhooks {
		selectors[w.Name] = w.NamespaceSelector
	}
	for _, w := range vwc.Webhooks {
		if w.NamespaceSelector != nil && len(w.NamespaceSelector.MatchExpressions) > 0 {
			selectors[w.Name] = w.NamespaceSelector
		}
	}
	for _, name := range []string{"mpod.policy.joist.dev", "vpod.policy.joist.dev"} {
		if !strings.Contains(toString(selectors[name]), dep.Namespace) || strings.Contains(toString(selectors[name]), " system]") {
			t.Errorf("%s namespaceSelector %v does not exclude the install namespace %s", name, selectors[name], dep.Namespace)
		}
	}
	for _, kind := range []string{"PodDisruptionBudget", "ServiceMonitor", "NetworkPolicy", "Namespace"} {
		found := false
		for _, o := range r.objs {
			found = found || o.GetKind() == kind
		}
		if !found {
			t.Errorf("config/default renders no %s", kind)
		}
	}
}

func toString(v any) string { return strings.ReplaceAll(fmtAny(v), "\n", " ") }

// TestRBACAudit fails when a role of config/default grants a wildcard verb, resource or group,
// cluster-wide read of Secrets, or creating Nodes (only the KWOK provider writes Nodes; config/kwok
// grants it on its own — see TestKWOKOverlay). The OLM inputs and bundle are audited for Node
// creation in TestNoInstallButKWOKCreatesNodes.
func TestRBACAudit(t *testing.T) {
	r := renderDefault(t)
	if granted := nodeCreateGrants(t, r.objs); len(granted) > 0 {
		t.Errorf("config/default grants creating Nodes through %v: only config/kwok may", granted)
	}
	roles := 0
	for _, o := range r.objs {
		var rules []rbacv1.PolicyRule
		clusterWide := false
		switch o.GetKind() {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			r.get(t, "ClusterRole", o.GetName(), &cr)
			rules, clusterWide = cr.Rules, true
		case "Role":
			var role rbacv1.Role
			r.get(t, "Role", o.GetName(), &role)
			rules = role.Rules
		default:
			continue
		}
		roles++
		for _, rule := range rules {
			for _, field := range [][]string{rule.Verbs, rule.Resources, rule.APIGroups, rule.NonResourceURLs} {
				if contains(field, "*") {
					t.Errorf("%s %s grants a wildcard: %+v", o.GetKind(), o.GetName(), rule)
				}
			}
			if clusterWide && contains(rule.APIGroups, "") && contains(rule.Resources, "secrets") &&
				(contains(rule.Verbs, "get") || contains(rule.Verbs, "list") || contains(rule.Verbs, "watch")) {
				t.Errorf("ClusterRole %s reads Secrets cluster-wide: %+v", o.GetName(), rule)
			}
		}
	}
	if roles < 4 {
		t.Errorf("audited %d roles, want the manager, leader election, metrics auth and metrics reader roles", roles)
	}
}
