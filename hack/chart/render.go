package chart

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Release names a release as `helm install NAME CHART -n NAMESPACE` does.
type Release struct {
	Name, Namespace string
	// Values are the user's values (--set / -f), merged over values.yaml.
	Values map[string]any
	// Config, when set, lets the templates' lookup read that apiserver (as helm install does);
	// without it lookup finds nothing (as helm template does).
	Config *rest.Config
}

// Rendered is a chart rendered for a release: its crds/ and its templates' objects.
type Rendered struct {
	CRDs    []*unstructured.Unstructured
	Objects []*unstructured.Unstructured
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Render renders the chart in chartDir with Helm's engine, as `helm template` (or, with
// Release.Config, `helm install`) does, and decodes every manifest.
func Render(chartDir string, rel Release) (*Rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	caps := common.DefaultCapabilities.Copy()
	vals, err := chartutil.ToRenderValues(ch, rel.Values, common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	var manifests map[string]string
	if rel.Config != nil {
		manifests, err = engine.RenderWithClient(ch, vals, rel.Config)
	} else {
		manifests, err = engine.Render(ch, vals)
	}
	if err != nil {
		return nil, err
	}
	out := &Rendered{}
	names := make([]string, 0, len(manifests))
	for name := range manifests {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if path.Base(name) == "NOTES.txt" {
			out.Notes = manifests[name]
			continue
		}
		objs, err := decode(name, manifests[name])
		if err != nil {
			return nil, err
		}
		out.Objects = append(out.Objects, objs...)
	}
	for _, f := range ch.CRDObjects() {
		objs, err := decode(f.Filename, string(f.File.Data))
		if err != nil {
			return nil, err
		}
		out.CRDs = append(out.CRDs, objs...)
	}
	return out, nil
}

// decode splits a rendered template into its YAML documents and decodes the non-empty ones.
func decode(name, text string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(text, "\n---") {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			return nil, fmt.Errorf("decoding %s: %w\n%s", name, err, doc)
		}
		if len(o.Object) == 0 {
			continue
		}
		if o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("%s renders an object without kind or name:\n%s", name, doc)
		}
		out = append(out, o)
	}
	return out, nil
}

// Lint runs Helm's chart linter (`helm lint`) with values over values.yaml and returns its messages.
func Lint(chartDir, namespace string, values map[string]any) []support.Message {
	return lint.RunAll(chartDir, values, namespace).Messages
}
