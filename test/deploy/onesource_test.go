package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// install is what one way of installing Joist gives the manager: the CRDs (spec by name), what its
// ServiceAccount may do (one "scope group resource verb" grant per line), and its webhooks.
type install struct {
	name     string
	crds     map[string]string // CRD name → spec as JSON
	grants   map[string]bool
	webhooks map[string]webhookShape
}

// webhookShape is what every install must agree on for a webhook. OLM v0's webhookdefinitions
// cannot carry namespaceSelector and matchConditions (hack/bundle), so those are compared only
// between the chart and kustomize (full).
type webhookShape struct {
	Type, Path, FailurePolicy, SideEffects string
	Rules, Timeout, Reinvocation           string
	Full                                   string // namespaceSelector, objectSelector, matchConditions
}

// grantsOf expands rules into one grant per scope, group, resource (or URL), resource name and verb.
func grantsOf(scope string, rules []rbacv1.PolicyRule, into map[string]bool) {
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				into[fmt.Sprintf("%s url %s %s", scope, u, v)] = true
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						into[fmt.Sprintf("%s %s/%s%s %s", scope, g, res, prefixed("/", n), v)] = true
					}
				}
			}
		}
	}
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func asJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

func toShape(typ, path string, rules any, fp, se any, timeout, reinvocation any) webhookShape {
	return webhookShape{Type: typ, Path: path, Rules: asJSON(rules), FailurePolicy: asJSON(fp), SideEffects: asJSON(se),
		Timeout: asJSON(timeout), Reinvocation: asJSON(reinvocation)}
}

// installOf reads a rendered install (kustomize or Helm): CRDs, the grants of the Deployment's
// ServiceAccount through every binding that names it, and the webhooks.
func installOf(t *testing.T, name string, objs []*unstructured.Unstructured) install {
	t.Helper()
	in := install{name: name, crds: map[string]string{}, grants: map[string]bool{}, webhooks: map[string]webhookShape{}}
	decode := func(o *unstructured.Unstructured, into any) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
			t.Fatalf("%s: decoding %s %s: %v", name, o.GetKind(), o.GetName(), err)
		}
	}
	var sa, ns string
	clusterRoles, roles := map[string][]rbacv1.PolicyRule{}, map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			decode(o, &d)
			sa, ns = d.Spec.Template.Spec.ServiceAccountName, d.Namespace
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole
			decode(o, &r)
			if o.GetKind() == "Role" {
				roles[o.GetNamespace()+"/"+o.GetName()] = r.Rules
			} else {
				clusterRoles[o.GetName()] = r.Rules
			}
		case "CustomResourceDefinition":
			in.crds[o.GetName()] = asJSON(o.Object["spec"])
		case "MutatingWebhookConfiguration":
			var c admissionregistrationv1.MutatingWebhookConfiguration
			decode(o, &c)
			for _, w := range c.Webhooks {
				s := toShape("mutating", *w.ClientConfig.Service.Path, w.Rules, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, w.ReinvocationPolicy)
				s.Full = asJSON([]any{selectorWithoutInstallNamespace(w.NamespaceSelector, ns), w.ObjectSelector, w.MatchConditions})
				in.webhooks[w.Name] = s
			}
		case "ValidatingWebhookConfiguration":
			var c admissionregistrationv1.ValidatingWebhookConfiguration
			decode(o, &c)
			for _, w := range c.Webhooks {
				s := toShape("validating", *w.ClientConfig.Service.Path, w.Rules, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, nil)
				s.Full = asJSON([]any{selectorWithoutInstallNamespace(w.NamespaceSelector, ns), w.ObjectSelector, w.MatchConditions})
				in.webhooks[w.Name] = s
			}
		}
	}
	if sa == "" {
		t.Fatalf("%s renders no Deployment", name)
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" && o.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding
		decode(o, &b)
		if !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == ns
		}) {
			continue
		}
		switch {
		case o.GetKind() == "ClusterRoleBinding":
			grantsOf("cluster", clusterRoles[b.RoleRef.Name], in.grants)
		case b.RoleRef.Kind == "Role":
			grantsOf("namespace", roles[b.Namespace+"/"+b.RoleRef.Name], in.grants)
		default:
			grantsOf("namespace", clusterRoles[b.RoleRef.Name], in.grants)
		}
	}
	return in
}

// selectorWithoutInstallNamespace is a namespaceSelector with the install's own namespace (which
// differs between installs by design) replaced by a placeholder.
func selectorWithoutInstallNamespace(sel any, ns string) any {
	return strings.ReplaceAll(asJSON(sel), `"`+ns+`"`, `"<install namespace>"`)
}

// installOfCSV reads the registry+v1 bundle as OLM installs it: CRDs from its manifests, the
// Deployment's ServiceAccount's clusterPermissions and permissions, and its webhookdefinitions.
func installOfCSV(t *testing.T, b *manifests.Bundle) install {
	t.Helper()
	in := install{name: "the OLM bundle", crds: map[string]string{}, grants: map[string]bool{}, webhooks: map[string]webhookShape{}}
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "bundle", "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files { // as written (the typed CRDs of b.V1CRDs drop nothing, but reorder)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &o.Object); err != nil {
			t.Fatalf("decoding %s: %v", f, err)
		}
		if o.GetKind() == "CustomResourceDefinition" {
			in.crds[o.GetName()] = asJSON(o.Object["spec"])
		}
	}
	if len(in.crds) != len(b.V1CRDs) {
		t.Fatalf("bundle/manifests has %d CRD files, OLM reads %d CRDs", len(in.crds), len(b.V1CRDs))
	}
	spec := b.CSV.Spec.InstallStrategy.StrategySpec
	sa := spec.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
	for _, p := range spec.ClusterPermissions {
		if p.ServiceAccountName == sa {
			grantsOf("cluster", p.Rules, in.grants)
		}
	}
	for _, p := range spec.Permissions {
		if p.ServiceAccountName == sa {
			grantsOf("namespace", p.Rules, in.grants)
		}
	}
	for _, w := range b.CSV.Spec.WebhookDefinitions {
		typ := "validating"
		if w.Type == operatorsv1alpha1.MutatingAdmissionWebhook {
			typ = "mutating"
		}
		var reinvocation any
		if typ == "mutating" {
			reinvocation = w.ReinvocationPolicy
		}
		in.webhooks[w.GenerateName] = toShape(typ, *w.WebhookPath, w.Rules, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds, reinvocation)
	}
	return in
}

// disagreements lists every difference between installs and the reference install ref: a CRD, a
// grant of the manager's ServiceAccount or a webhook (path, rules, policies) present in one and not
// the other, or different.
func disagreements(ref install, others ...install) []string {
	var out []string
	for _, o := range others {
		for name, spec := range ref.crds {
			if got, ok := o.crds[name]; !ok {
				out = append(out, fmt.Sprintf("CRD %s: in %s, not in %s", name, ref.name, o.name))
			} else if got != spec {
				out = append(out, fmt.Sprintf("CRD %s: spec differs between %s and %s", name, ref.name, o.name))
			}
		}
		for name := range o.crds {
			if _, ok := ref.crds[name]; !ok {
				out = append(out, fmt.Sprintf("CRD %s: in %s, not in %s", name, o.name, ref.name))
			}
		}
		for g := range ref.grants {
			if !o.grants[g] {
				out = append(out, fmt.Sprintf("grant %q: in %s, not in %s", g, ref.name, o.name))
			}
		}
		for g := range o.grants {
			if !ref.grants[g] {
				out = append(out, fmt.Sprintf("grant %q: in %s, not in %s", g, o.name, ref.name))
			}
		}
		for name, w := range ref.webhooks {
			got, ok := o.webhooks[name]
			if !ok {
				out = append(out, fmt.Sprintf("webhook %s: in %s, not in %s", name, ref.name, o.name))
				continue
			}
			if got.Full == "" { // OLM's webhookdefinitions have no selectors or match conditions
				w.Full = ""
			}
			if got != w {
				out = append(out, fmt.Sprintf("webhook %s: %+v in %s, %+v in %s", name, w, ref.name, got, o.name))
			}
		}
		for name := range o.webhooks {
			if _, ok := ref.webhooks[name]; !ok {
				out = append(out, fmt.Sprintf("webhook %s: in %s, not in %s", name, o.name, ref.name))
			}
		}
	}
	sort.Strings(out)
	return out
}

// installs are the Helm chart (default values, its crds/ included), config/default and the bundle.
func installs(t *testing.T) (helm, kustomize, olm install) {
	t.Helper()
	r, ch := renderChart(t, nil)
	helm = installOf(t, "the Helm chart", append(slices.Clone(ch.CRDs), r.objs...))
	kustomize = installOf(t, "config/default", renderDefault(t).objs)
	b, err := manifests.GetBundleFromDir(filepath.Join(repoRoot(t), "bundle"))
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	return helm, kustomize, installOfCSV(t, b)
}

// TestOneSource: the Helm chart, kustomize (config/default) and the OLM bundle install the same
// CRDs, grant the manager's ServiceAccount the same permissions (cluster-wide and in its namespace)
// and register the same webhooks (paths, rules, failure and side-effect policies, timeouts; between
// the chart and kustomize also namespace selectors and match conditions) — all three come from the
// markers through config/.
func TestOneSource(t *testing.T) {
	helm, kustomize, olm := installs(t)
	if len(helm.crds) != 7 || len(helm.webhooks) != 6 || len(helm.grants) < 50 {
		t.Fatalf("the chart has %d CRDs, %d webhooks, %d grants: want 7, 6 and config/rbac's", len(helm.crds), len(helm.webhooks), len(helm.grants))
	}
	for _, d := range disagreements(kustomize, helm, olm) {
		t.Error(d)
	}
	t.Logf("agree on %d CRDs, %d grants, %d webhooks", len(helm.crds), len(helm.grants), len(helm.webhooks))

	// With the KWOK provider: the chart's cloudProvider=kwok and config/kwok (the same plus creating Nodes).
	r, ch := renderChart(t, map[string]any{"cloudProvider": "kwok"})
	helmKWOK := installOf(t, "the Helm chart with cloudProvider=kwok", append(slices.Clone(ch.CRDs), r.objs...))
	kustomizeKWOK := installOf(t, "config/kwok", render(t, "kwok"))
	if !helmKWOK.grants["cluster /nodes create"] {
		t.Error("the kwok chart does not grant creating Nodes")
	}
	for _, d := range disagreements(kustomizeKWOK, helmKWOK) {
		t.Error(d)
	}
}

// TestOneSourceCatchesADisagreement: a rule added to the chart's manager ClusterRole alone, or a
// webhook path changed in the chart alone, is reported by name — TestOneSource can fail.
func TestOneSourceCatchesADisagreement(t *testing.T) {
	r, ch := renderChart(t, map[string]any{"additionalClusterRoleRules": []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}},
	}})
	for _, o := range r.objs {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
			_ = unstructured.SetNestedField(hooks[0].(map[string]any), "/validate-elsewhere", "clientConfig", "service", "path")
			_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
		}
	}
	helm := installOf(t, "the Helm chart", append(slices.Clone(ch.CRDs), r.objs...))
	_, kustomize, olm := installs(t)
	got := strings.Join(disagreements(kustomize, helm, olm), "\n")
	for _, want := range []string{`grant "cluster /secrets get": in the Helm chart, not in config/default`, "/validate-elsewhere"} {
		if !strings.Contains(got, want) {
			t.Errorf("disagreements do not report %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "the OLM bundle") {
		t.Errorf("config/default and the bundle agree, yet a disagreement names the bundle:\n%s", got)
	}
}
