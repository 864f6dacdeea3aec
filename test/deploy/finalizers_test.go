package deploy

import (
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// allows reports whether a rule grants verb on group/resource (wildcards included).
func allows(rule rbacv1.PolicyRule, group, resource, verb string) bool {
	return (contains(rule.APIGroups, group) || contains(rule.APIGroups, "*")) &&
		(contains(rule.Resources, resource) || contains(rule.Resources, "*")) &&
		(contains(rule.Verbs, verb) || contains(rule.Verbs, "*"))
}

func rolesAllow(t *testing.T, objs []*unstructured.Unstructured, group, resource, verb string) bool {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
			t.Fatalf("decoding %s: %v", o.GetName(), err)
		}
		for _, r := range role.Rules {
			if allows(r, group, resource, verb) {
				return true
			}
		}
	}
	return false
}

// TestNodePoolFinalizersGranted: Joist's NodeClaims carry an owner reference to their NodePool with
// blockOwnerDeletion, which OpenShift's OwnerReferencesPermissionEnforcement admission plugin (on by
// default there) refuses unless the creator may update nodepools/finalizers. Every install — the
// generated role (config/rbac), the bundle's inputs (config/manifests) and the committed CSV — grants
// it.
func TestNodePoolFinalizersGranted(t *testing.T) {
	const group, resource, verb = "karpenter.sh", "nodepools/finalizers", "update"
	if !rolesAllow(t, render(t, "rbac"), group, resource, verb) {
		t.Error("config/rbac does not grant update on karpenter.sh nodepools/finalizers")
	}
	if !rolesAllow(t, render(t, "manifests"), group, resource, verb) {
		t.Error("config/manifests does not grant update on karpenter.sh nodepools/finalizers")
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
				} `json:"spec"`
			} `json:"install"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		t.Fatalf("decoding the CSV: %v", err)
	}
	for _, p := range csv.Spec.Install.Spec.ClusterPermissions {
		for _, r := range p.Rules {
			if allows(r, group, resource, verb) {
				return
			}
		}
	}
	t.Error("the bundle's CSV clusterPermissions do not grant update on karpenter.sh nodepools/finalizers")
}
