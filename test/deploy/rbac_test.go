package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/hack/bundle"
)

// grantsNodeCreate reports whether a rule lets its subject create core Nodes.
func grantsNodeCreate(rule rbacv1.PolicyRule) bool {
	return (contains(rule.APIGroups, "") || contains(rule.APIGroups, "*")) &&
		(contains(rule.Resources, "nodes") || contains(rule.Resources, "*")) &&
		(contains(rule.Verbs, "create") || contains(rule.Verbs, "*"))
}

// nodeCreateGrants names the Roles and ClusterRoles among objs that grant creating Nodes.
func nodeCreateGrants(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var granted []string
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		var role rbacv1.ClusterRole // a Role's rules decode the same way
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatalf("decoding %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		if slices.ContainsFunc(role.Rules, grantsNodeCreate) {
			granted = append(granted, o.GetKind()+" "+o.GetName())
		}
	}
	return granted
}

func render(t *testing.T, dir ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := bundle.Render(filepath.Join(append([]string{repoRoot(t), "config"}, dir...)...))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestNoInstallButKWOKCreatesNodes: the generated manager role (config/rbac/role.yaml, from the
// markers), the OLM bundle's inputs (config/manifests) and the committed bundle's CSV never grant
// creating Nodes — on a real cloud the kubelet registers its own Node.
func TestNoInstallButKWOKCreatesNodes(t *testing.T) {
	generated := render(t, "rbac")
	if granted := nodeCreateGrants(t, generated); len(granted) > 0 {
		t.Errorf("config/rbac (generated from the +kubebuilder:rbac markers) grants creating Nodes through %v", granted)
	}
	if granted := nodeCreateGrants(t, render(t, "manifests")); len(granted) > 0 {
		t.Errorf("config/manifests (the OLM bundle's input) grants creating Nodes through %v", granted)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "bundle", "manifests", "joist.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var csv struct {
		Spec struct {
			Install struct {
				Spec struct {
					ClusterPermissions []struct{ Rules []rbacv1.PolicyRule } `json:"clusterPermissions"`
					Permissions        []struct{ Rules []rbacv1.PolicyRule } `json:"permissions"`
				} `json:"spec"`
			} `json:"install"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		t.Fatalf("decoding the CSV: %v", err)
	}
	perms := append(csv.Spec.Install.Spec.ClusterPermissions, csv.Spec.Install.Spec.Permissions...)
	if len(perms) == 0 {
		t.Fatal("the CSV has no permissions to audit")
	}
	for _, p := range perms {
		for _, rule := range p.Rules {
			if grantsNodeCreate(rule) {
				t.Errorf("the bundle's CSV grants creating Nodes: %+v", rule)
			}
		}
	}
}

// TestKWOKOverlay: config/kwok is config/default plus exactly the KWOK provider's ClusterRole and
// its binding to the manager's ServiceAccount, and it selects the kwok provider ($CLOUD_PROVIDER).
func TestKWOKOverlay(t *testing.T) {
	base, kwok := renderDefault(t), rendered{objs: render(t, "kwok")}
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	inBase := map[string]bool{}
	for _, o := range base.objs {
		inBase[key(o)] = true
	}
	var added []string
	for _, o := range kwok.objs {
		if !inBase[key(o)] {
			added = append(added, key(o))
		}
		delete(inBase, key(o))
	}
	slices.Sort(added)
	want := []string{"ClusterRole /joist-kwok-node-creator", "ClusterRoleBinding /joist-kwok-node-creator"}
	if !slices.Equal(added, want) || len(inBase) > 0 {
		t.Errorf("config/kwok adds %v and drops %v, want it to add %v and drop nothing", added, inBase, want)
	}
	if granted := nodeCreateGrants(t, kwok.objs); !slices.Equal(granted, []string{"ClusterRole joist-kwok-node-creator"}) {
		t.Errorf("config/kwok grants creating Nodes through %v, want the KWOK ClusterRole only", granted)
	}
	var sa corev1.ServiceAccount
	kwok.get(t, "ServiceAccount", "joist-controller-manager", &sa)
	var binding rbacv1.ClusterRoleBinding
	kwok.get(t, "ClusterRoleBinding", "joist-kwok-node-creator", &binding)
	if binding.RoleRef.Name != "joist-kwok-node-creator" || len(binding.Subjects) != 1 ||
		binding.Subjects[0].Name != sa.Name || binding.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("KWOK binding %+v does not bind joist-kwok-node-creator to ServiceAccount %s/%s", binding, sa.Namespace, sa.Name)
	}
	for _, r := range []rendered{base, kwok} {
		var dep appsv1.Deployment
		r.get(t, "Deployment", "joist-controller-manager", &dep)
		if dep.Spec.Template.Spec.ServiceAccountName != sa.Name {
			t.Errorf("manager runs as %s, want %s", dep.Spec.Template.Spec.ServiceAccountName, sa.Name)
		}
	}
	if p, by := selectedProvider(managerContainer(t, kwok)); p != "kwok" || by != "env" {
		t.Errorf("config/kwok selects provider %q by %q, want kwok through $CLOUD_PROVIDER", p, by)
	}
}
