package bundle

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	opversion "github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// webhookTargetPort is the manager's webhook server port (cmd/joist --webhook-port).
const webhookTargetPort = 9443

func buildCSV(in *inputs, examples []*unstructured.Unstructured, opts Options) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv := in.csv.DeepCopy()
	csv.Name = fmt.Sprintf("%s.v%s", opts.Package, opts.Version)
	csv.Namespace = ""
	v, err := semver.Parse(opts.Version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", opts.Version, err)
	}
	csv.Spec.Version = opversion.OperatorVersion{Version: v}
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations["containerImage"] = opts.Image
	almExamples, err := almExamples(examples)
	if err != nil {
		return nil, err
	}
	csv.Annotations["alm-examples"] = almExamples

	dep := in.deployment
	for i := range dep.Spec.Template.Spec.Containers {
		if dep.Spec.Template.Spec.Containers[i].Name == "manager" {
			dep.Spec.Template.Spec.Containers[i].Image = opts.Image
		}
	}
	sa := dep.Spec.Template.Spec.ServiceAccountName
	strategy := operatorsv1alpha1.StrategyDetailsDeployment{
		DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: dep.Name, Spec: dep.Spec, Label: dep.Labels}},
	}
	for _, b := range in.clusterBinding {
		if r, ok := in.clusterRoles[b.RoleRef.Name]; ok && boundTo(b.Subjects, sa) {
			strategy.ClusterPermissions = mergePermissions(strategy.ClusterPermissions, sa, r.Rules)
		}
	}
	for _, b := range in.roleBinding {
		if r, ok := in.roles[b.RoleRef.Name]; ok && boundTo(b.Subjects, sa) {
			strategy.Permissions = mergePermissions(strategy.Permissions, sa, r.Rules)
		}
	}
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}

	csv.Spec.CustomResourceDefinitions.Owned = nil
	for _, crd := range in.crds {
		for _, ver := range crd.Spec.Versions {
			if !ver.Served {
				continue
			}
			desc := ""
			if ver.Schema != nil && ver.Schema.OpenAPIV3Schema != nil {
				desc = firstSentence(ver.Schema.OpenAPIV3Schema.Description)
			}
			csv.Spec.CustomResourceDefinitions.Owned = append(csv.Spec.CustomResourceDefinitions.Owned, operatorsv1alpha1.CRDDescription{
				Name: crd.Name, Version: ver.Name, Kind: crd.Spec.Names.Kind, DisplayName: crd.Spec.Names.Kind, Description: desc,
			})
		}
	}

	csv.Spec.WebhookDefinitions = nil
	for _, w := range in.mutating {
		d := webhookDescription(w.Name, operatorsv1alpha1.MutatingAdmissionWebhook, dep.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions)
		d.ReinvocationPolicy = w.ReinvocationPolicy
		csv.Spec.WebhookDefinitions = append(csv.Spec.WebhookDefinitions, d)
	}
	for _, w := range in.validating {
		csv.Spec.WebhookDefinitions = append(csv.Spec.WebhookDefinitions, webhookDescription(w.Name, operatorsv1alpha1.ValidatingAdmissionWebhook, dep.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions))
	}
	sort.Slice(csv.Spec.WebhookDefinitions, func(i, j int) bool {
		return csv.Spec.WebhookDefinitions[i].GenerateName < csv.Spec.WebhookDefinitions[j].GenerateName
	})
	return csv, nil
}

// webhookDescription is one webhookdefinitions entry. OLM v0 sets namespaceSelector from the
// OperatorGroup and has no matchConditions, so those two fields do not carry over: the manager
// skips its own namespace in code, and annotation-only webhooks judge every object (fail open).
func webhookDescription(name string, typ operatorsv1alpha1.WebhookAdmissionType, deployment string, cc admissionregistrationv1.WebhookClientConfig,
	rules []admissionregistrationv1.RuleWithOperations, fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType,
	objectSelector *metav1.LabelSelector, se *admissionregistrationv1.SideEffectClass, timeout *int32, reviews []string) operatorsv1alpha1.WebhookDescription {
	d := operatorsv1alpha1.WebhookDescription{
		GenerateName: name, Type: typ, DeploymentName: deployment, ContainerPort: 443, TargetPort: targetPort(webhookTargetPort),
		Rules: rules, FailurePolicy: fp, MatchPolicy: mp, SideEffects: se, TimeoutSeconds: timeout,
		AdmissionReviewVersions: reviews,
	}
	if cc.Service != nil && cc.Service.Path != nil {
		d.WebhookPath = ptr.To(*cc.Service.Path)
	}
	d.ObjectSelector = objectSelector
	return d
}

func boundTo(subjects []rbacv1.Subject, sa string) bool {
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa {
			return true
		}
	}
	return false
}

func mergePermissions(perms []operatorsv1alpha1.StrategyDeploymentPermissions, sa string, rules []rbacv1.PolicyRule) []operatorsv1alpha1.StrategyDeploymentPermissions {
	for i := range perms {
		if perms[i].ServiceAccountName == sa {
			perms[i].Rules = append(perms[i].Rules, rules...)
			return perms
		}
	}
	return append(perms, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules})
}

// almExamples is the alm-examples annotation: the samples as a JSON array, one per kind, sorted.
func almExamples(examples []*unstructured.Unstructured) (string, error) {
	seen := sets.New[string]()
	var list []map[string]any
	for _, e := range examples {
		key := e.GetAPIVersion() + "/" + e.GetKind() + "/" + e.GetName()
		if seen.Has(key) {
			continue
		}
		seen.Insert(key)
		list = append(list, e.Object)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := &unstructured.Unstructured{Object: list[i]}, &unstructured.Unstructured{Object: list[j]}
		return a.GetKind()+a.GetName() < b.GetKind()+b.GetName()
	})
	raw, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding alm-examples: %w", err)
	}
	return string(raw), nil
}

// firstSentence trims a CRD schema description to its first paragraph.
func firstSentence(s string) string {
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	return strings.Join(strings.Fields(s), " ")
}
