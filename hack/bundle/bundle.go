// Package bundle builds Joist's OLM registry+v1 bundle (bundle/manifests, bundle/metadata) from the
// kustomize base config/manifests, as `operator-sdk generate bundle` would, without operator-sdk:
// the CSV gets its install strategy from the rendered Deployment and RBAC, its owned CRDs from the
// CRDs, its webhookdefinitions from the webhook configurations generated from the markers in webhooks/,
// and its alm-examples from config/manifests/samples. Output is deterministic, so a test can compare
// it with the committed bundle/.
package bundle

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Options say what to build.
type Options struct {
	// ConfigDir is the repository's config/ folder.
	ConfigDir string
	// Version is the operator's semantic version, without a leading v (e.g. 0.1.0).
	Version string
	// Image is the manager image the CSV installs.
	Image string
	// Package and Channel name the bundle in a catalog.
	Package, Channel string
}

// Files maps a path inside bundle/ (e.g. manifests/joist.clusterserviceversion.yaml) to its content.
type Files map[string][]byte

// Render runs kustomize on dir and returns its objects.
func Render(dir string) ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		raw, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("reading %s from %s: %w", r.CurId(), dir, err)
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decoding %s from %s: %w", r.CurId(), dir, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Generate builds the bundle's files.
func Generate(opts Options) (Files, error) {
	objs, err := Render(opts.ConfigDir + "/manifests")
	if err != nil {
		return nil, err
	}
	examples, err := Render(opts.ConfigDir + "/manifests/samples")
	if err != nil {
		return nil, err
	}
	in, err := sortInputs(objs)
	if err != nil {
		return nil, err
	}
	if in.csv == nil || in.deployment == nil {
		return nil, fmt.Errorf("config/manifests must render one ClusterServiceVersion and one Deployment")
	}
	files := Files{}
	csv, err := buildCSV(in, examples, opts)
	if err != nil {
		return nil, err
	}
	name := opts.Package + ".clusterserviceversion.yaml"
	if files["manifests/"+name], err = marshal(csv); err != nil {
		return nil, err
	}
	for _, crd := range in.crds {
		if files["manifests/"+crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"], err = marshal(crd); err != nil {
			return nil, err
		}
	}
	for _, o := range in.extra {
		gvk := o.GroupVersionKind()
		group := gvk.Group
		if group != "" {
			group += "_"
		}
		path := fmt.Sprintf("manifests/%s_%s%s_%s.yaml", o.GetName(), group, gvk.Version, strings.ToLower(gvk.Kind))
		if files[path], err = marshal(o.Object); err != nil {
			return nil, err
		}
	}
	files["metadata/annotations.yaml"], err = marshal(map[string]any{"annotations": Annotations(opts)})
	return files, err
}

// Annotations are the bundle's metadata/annotations.yaml entries (bundle.Dockerfile repeats them as labels).
func Annotations(opts Options) map[string]string {
	return map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         opts.Package,
		"operators.operatorframework.io.bundle.channels.v1":        opts.Channel,
		"operators.operatorframework.io.bundle.channel.default.v1": opts.Channel,
	}
}

// inputs are config/manifests' objects sorted by their place in the bundle.
type inputs struct {
	csv            *operatorsv1alpha1.ClusterServiceVersion
	deployment     *appsv1.Deployment
	crds           []*apiextensionsv1.CustomResourceDefinition
	clusterRoles   map[string]*rbacv1.ClusterRole
	roles          map[string]*rbacv1.Role
	clusterBinding []*rbacv1.ClusterRoleBinding
	roleBinding    []*rbacv1.RoleBinding
	mutating       []admissionregistrationv1.MutatingWebhook
	validating     []admissionregistrationv1.ValidatingWebhook
	extra          []*unstructured.Unstructured // shipped as they are (Services, PDB, unbound ClusterRoles)
}

func sortInputs(objs []*unstructured.Unstructured) (*inputs, error) {
	in := &inputs{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}}
	var services []*unstructured.Unstructured
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case "ClusterServiceVersion":
			in.csv = &operatorsv1alpha1.ClusterServiceVersion{}
			err = convert(o, in.csv)
		case "Deployment":
			in.deployment = &appsv1.Deployment{}
			err = convert(o, in.deployment)
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err = convert(o, crd)
			in.crds = append(in.crds, crd)
		case "ClusterRole":
			r := &rbacv1.ClusterRole{}
			err = convert(o, r)
			in.clusterRoles[r.Name] = r
		case "Role":
			r := &rbacv1.Role{}
			err = convert(o, r)
			in.roles[r.Name] = r
		case "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			err = convert(o, b)
			in.clusterBinding = append(in.clusterBinding, b)
		case "RoleBinding":
			b := &rbacv1.RoleBinding{}
			err = convert(o, b)
			in.roleBinding = append(in.roleBinding, b)
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = convert(o, c)
			in.mutating = append(in.mutating, c.Webhooks...)
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = convert(o, c)
			in.validating = append(in.validating, c.Webhooks...)
		case "Service":
			services = append(services, o)
		case "ServiceAccount", "Namespace":
			// OLM creates the service account named in the CSV and installs into its OperatorGroup's namespace.
		default:
			in.extra = append(in.extra, o)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	webhookServices := map[string]bool{}
	for _, w := range in.mutating {
		webhookServices[w.ClientConfig.Service.Name] = true
	}
	for _, w := range in.validating {
		webhookServices[w.ClientConfig.Service.Name] = true
	}
	for _, s := range services {
		if !webhookServices[s.GetName()] { // OLM creates the webhook Service itself
			in.extra = append(in.extra, s)
		}
	}
	bound := map[string]bool{}
	for _, b := range in.clusterBinding {
		bound[b.RoleRef.Name] = true
	}
	for name, r := range in.clusterRoles {
		if !bound[name] { // e.g. metrics-reader: for users to bind, not a permission of the operator
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
			if err != nil {
				return nil, err
			}
			o := &unstructured.Unstructured{Object: u}
			o.SetAPIVersion("rbac.authorization.k8s.io/v1")
			o.SetKind("ClusterRole")
			in.extra = append(in.extra, o)
		}
	}
	for _, o := range in.extra {
		o.SetNamespace("") // OLM places namespaced extras in the install namespace
	}
	sort.Slice(in.crds, func(i, j int) bool { return in.crds[i].Name < in.crds[j].Name })
	sort.Slice(in.extra, func(i, j int) bool {
		return in.extra[i].GetKind()+"/"+in.extra[i].GetName() < in.extra[j].GetKind()+"/"+in.extra[j].GetName()
	})
	return in, nil
}

func convert(o *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true)
}

// marshal writes v as YAML without the empty creationTimestamp and status fields the typed structs carry.
func marshal(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	prune(m, "")
	return yaml.Marshal(m)
}

// prune drops the empty fields the typed structs write, except a CRD version's status subresource,
// whose empty map is what enables it (parent is the key m sits under).
func prune(m map[string]any, parent string) {
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			prune(x, k)
			if len(x) == 0 && (k == "status" && parent != "subresources" || k == "metadata" || k == "resources" || k == "strategy") {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em, k)
				}
			}
		case nil:
			if k == "creationTimestamp" {
				delete(m, k)
			}
		}
	}
}

func targetPort(port int32) *intstr.IntOrString {
	p := intstr.FromInt32(port)
	return &p
}
