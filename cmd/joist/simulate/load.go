package simulate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/quantity"
)

// source names where an object came from, for error messages.
type source struct {
	file string
	line int // first line of the document, 1-based
	doc  int // document number in the file, 1-based, empty documents not counted
	item int // index in a List's items, -1 when not in a List
	kind string
	name string // namespace/name or name
}

func (s source) String() string {
	where := fmt.Sprintf("%s:%d: document %d", s.file, s.line, s.doc)
	if s.item >= 0 {
		where += fmt.Sprintf(" items[%d]", s.item)
	}
	if s.kind != "" {
		where += fmt.Sprintf(" (%s %s)", s.kind, s.name)
	}
	return where
}

func (s source) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", s, fmt.Sprintf(format, args...))
}

// objects is everything read from the input files, in file and document order.
type objects struct {
	nodePools      []sourced[*v1.NodePool]
	pods           []sourced[*corev1.Pod]
	workloads      []sourced[runtime.Object] // Deployment, ReplicaSet, StatefulSet, Job
	daemonSets     []sourced[*appsv1.DaemonSet]
	nodes          []sourced[*corev1.Node]
	volumes        []sourced[*corev1.PersistentVolume]
	claims         []sourced[*corev1.PersistentVolumeClaim]
	storageClasses []sourced[*storagev1.StorageClass]
	csiNodes       []sourced[*storagev1.CSINode]
	nodeClaims     []sourced[*v1.NodeClaim]
	guardrails     []sourced[*policyv1alpha1.Guardrail]
	pdbs           []sourced[*policyv1.PodDisruptionBudget]
	namespaces     []sourced[*corev1.Namespace]
	// ignored are objects of known kinds the simulation does not use.
	ignored []source
}

type sourced[T any] struct {
	src source
	obj T
}

var supportedKinds = "NodePool, NodeClaim, Guardrail, Pod, Deployment, ReplicaSet, StatefulSet, Job, DaemonSet, Node, PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, PodDisruptionBudget, Namespace, List"

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, kwokv1alpha1.AddToScheme, policyv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// loader decodes manifests strictly: unknown and duplicate fields are errors.
type loader struct {
	decoder runtime.Decoder
	objs    objects
	pods    int64 // pods the input expands to so far (bounded by MaxPods)
}

func newLoader() *loader {
	return &loader{decoder: serializer.NewCodecFactory(newScheme(), serializer.EnableStrict).UniversalDeserializer()}
}

// loadPaths reads every path: a file, or a directory walked recursively for .yaml, .yml and .json
// files in lexical order.
func (l *loader) loadPaths(paths []string) error {
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("reading input: %w", err)
		}
		if !info.IsDir() {
			if err := l.loadFile(p); err != nil {
				return err
			}
			continue
		}
		var files []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					files = append(files, path)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading input directory %s: %w", p, err)
		}
		if len(files) == 0 {
			return fmt.Errorf("input directory %s holds no .yaml, .yml or .json files", p)
		}
		sort.Strings(files)
		for _, f := range files {
			if err := l.loadFile(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *loader) loadFile(path string) error {
	if err := checkFileSize(path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	for _, d := range splitDocuments(data) {
		if err := l.loadDocument(source{file: path, line: d.line, doc: d.n, item: -1}, d.data); err != nil {
			return err
		}
	}
	return nil
}

type document struct {
	line, n int
	data    []byte
}

// splitDocuments splits a YAML stream at `---` lines, dropping documents that hold only comments
// and blank lines, and remembers the line each document starts on.
func splitDocuments(data []byte) []document {
	var (
		out   []document
		cur   bytes.Buffer
		start = 1
	)
	flush := func() {
		if hasContent(cur.Bytes()) {
			out = append(out, document{line: start, n: len(out) + 1, data: bytes.Clone(cur.Bytes())})
		}
		cur.Reset()
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		trimmed := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("--- ")) || bytes.HasPrefix(trimmed, []byte("---\t")) {
			flush()
			start = i + 2
			continue
		}
		if cur.Len() == 0 && !hasContent(line) {
			start = i + 2 // report the first line with content
			continue
		}
		cur.Write(line)
	}
	flush()
	return out
}

func hasContent(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			return true
		}
	}
	return false
}

// header is the part of every object read before decoding, to name it in errors.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

func (l *loader) loadDocument(src source, data []byte) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return src.errorf("not valid YAML or JSON: %v", err)
	}
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return src.errorf("not a Kubernetes object: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	src.kind = h.Kind
	src.name = h.Metadata.Name
	if src.name == "" {
		src.name = "<no name>"
	}
	if h.Metadata.Namespace != "" {
		src.name = h.Metadata.Namespace + "/" + src.name
	}
	switch {
	case h.Kind == "":
		return src.errorf("kind is required")
	case h.APIVersion == "":
		return src.errorf("apiVersion is required")
	case h.Kind == "List" && src.item < 0:
		for i, item := range h.Items {
			itemSrc := src
			itemSrc.item, itemSrc.kind, itemSrc.name = i, "", ""
			if err := l.loadDocument(itemSrc, item); err != nil {
				return err
			}
		}
		return nil
	case strings.HasSuffix(h.Kind, "NodeClass") || strings.HasPrefix(h.APIVersion, "kustomize.config.k8s.io/"):
		// Provider NodeClasses (the simulation needs only the catalog) and kustomization files.
		l.objs.ignored = append(l.objs.ignored, src)
		return nil
	}

	if bad := boundedQuantities(js); bad != "" {
		return src.errorf("%s", bad)
	}
	obj, _, err := l.decoder.Decode(js, nil, nil)
	if err != nil {
		return src.errorf("%s", decodeError(h, js, err))
	}
	if h.Metadata.Name == "" {
		return src.errorf("metadata.name is required")
	}
	if err := l.countPods(src, obj); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *v1.NodePool:
		l.objs.nodePools = append(l.objs.nodePools, sourced[*v1.NodePool]{src, o})
	case *corev1.Pod:
		if err := validatePodSpec(&o.Spec, "spec"); err != nil {
			return src.errorf("%v", err)
		}
		l.objs.pods = append(l.objs.pods, sourced[*corev1.Pod]{src, o})
	case *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *batchv1.Job:
		if err := validateWorkload(o); err != nil {
			return src.errorf("%v", err)
		}
		l.objs.workloads = append(l.objs.workloads, sourced[runtime.Object]{src, o})
	case *appsv1.DaemonSet:
		if err := validatePodSpec(&o.Spec.Template.Spec, "spec.template.spec"); err != nil {
			return src.errorf("%v", err)
		}
		l.objs.daemonSets = append(l.objs.daemonSets, sourced[*appsv1.DaemonSet]{src, o})
	case *corev1.Node:
		l.objs.nodes = append(l.objs.nodes, sourced[*corev1.Node]{src, o})
	case *corev1.PersistentVolume:
		l.objs.volumes = append(l.objs.volumes, sourced[*corev1.PersistentVolume]{src, o})
	case *corev1.PersistentVolumeClaim:
		l.objs.claims = append(l.objs.claims, sourced[*corev1.PersistentVolumeClaim]{src, o})
	case *storagev1.StorageClass:
		l.objs.storageClasses = append(l.objs.storageClasses, sourced[*storagev1.StorageClass]{src, o})
	case *storagev1.CSINode:
		l.objs.csiNodes = append(l.objs.csiNodes, sourced[*storagev1.CSINode]{src, o})
	case *v1.NodeClaim:
		l.objs.nodeClaims = append(l.objs.nodeClaims, sourced[*v1.NodeClaim]{src, o})
	case *policyv1alpha1.Guardrail:
		l.objs.guardrails = append(l.objs.guardrails, sourced[*policyv1alpha1.Guardrail]{src, o})
	case *policyv1.PodDisruptionBudget:
		o.Namespace = namespaceOr(o.Namespace)
		l.objs.pdbs = append(l.objs.pdbs, sourced[*policyv1.PodDisruptionBudget]{src, o})
	case *corev1.Namespace:
		l.objs.namespaces = append(l.objs.namespaces, sourced[*corev1.Namespace]{src, o})
	default:
		l.objs.ignored = append(l.objs.ignored, src)
	}
	return nil
}

// decodeError rewrites decoder errors so they name the field.
func decodeError(h header, js []byte, err error) string {
	if runtime.IsNotRegisteredError(err) {
		return fmt.Sprintf("unknown kind %q (apiVersion %s); supported kinds are %s", h.Kind, h.APIVersion, supportedKinds)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.Contains(msg, "quantities must match") {
		var raw any
		if json.Unmarshal(js, &raw) == nil {
			if bad := findBadQuantity(raw, ""); bad != "" {
				return bad
			}
		}
	}
	return msg
}

// quantityMaps are the keys whose values are resource lists in the supported kinds.
var quantityMaps = map[string]bool{"requests": true, "limits": true, "overhead": true, "allocatable": true, "capacity": true}

// findBadQuantity walks a decoded document and names the first resource quantity that does not parse.
func findBadQuantity(v any, path string) string {
	return walkQuantities(v, path, checkQuantity)
}

// walkQuantities calls check on each resource quantity of a decoded document (the entries of
// requests, limits, overhead, allocatable and capacity maps, sizeLimit and storage) and returns its
// first complaint.
func walkQuantities(v any, path string, check func(v any, path string) string) string {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			p := strings.TrimPrefix(path+"."+k, ".")
			if list, ok := t[k].(map[string]any); ok && quantityMaps[k] {
				for _, name := range sortedKeys(list) {
					if msg := check(list[name], p+"."+name); msg != "" {
						return msg
					}
				}
				continue
			}
			if k == "sizeLimit" || k == "storage" {
				if msg := check(t[k], p); msg != "" {
					return msg
				}
			}
			if msg := walkQuantities(t[k], p, check); msg != "" {
				return msg
			}
		}
	case []any:
		for i, e := range t {
			if msg := walkQuantities(e, fmt.Sprintf("%s[%d]", path, i), check); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// boundedQuantities names the first resource quantity whose text is out of quantity's bounds, before
// the decoder parses it: parsing "1e-9999999", or any arithmetic on "1e9999999", would stall the
// simulation for seconds per quantity.
func boundedQuantities(js []byte) string {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var raw any
	if dec.Decode(&raw) != nil {
		return "" // the decoder reports it
	}
	return walkQuantities(raw, "", func(v any, path string) string {
		text, ok := quantityText(v)
		if why := quantity.CheckText(text); ok && why != "" {
			return fmt.Sprintf("%s: %q %s", path, text, why)
		}
		return ""
	})
}

// quantityText is a decoded JSON value as quantity text: a string, or a number as written.
func quantityText(v any) (string, bool) {
	switch q := v.(type) {
	case string:
		return q, true
	case json.Number:
		return string(q), true
	}
	return "", false
}

func checkQuantity(v any, path string) string {
	text, ok := quantityText(v)
	if !ok {
		return ""
	}
	if _, err := resource.ParseQuantity(text); err != nil {
		return fmt.Sprintf("%s: %q is not a quantity; write e.g. 500m, \"2\", 4Gi", path, text)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateWorkload checks a workload's pod template like a pod.
func validateWorkload(obj runtime.Object) error {
	var spec *corev1.PodSpec
	switch o := obj.(type) {
	case *appsv1.Deployment:
		spec = &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		spec = &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		spec = &o.Spec.Template.Spec
	case *batchv1.Job:
		spec = &o.Spec.Template.Spec
	default:
		return nil
	}
	return validatePodSpec(spec, "spec.template.spec")
}

// validatePodSpec checks what the API server would reject and the simulation relies on.
func validatePodSpec(spec *corev1.PodSpec, path string) error {
	if len(spec.Containers) == 0 {
		return fmt.Errorf("%s.containers is empty; a pod needs at least one container", path)
	}
	var errs []error
	for i, c := range spec.Containers {
		if c.Name == "" {
			errs = append(errs, fmt.Errorf("%s.containers[%d].name is required", path, i))
		}
	}
	return errors.Join(errs...)
}
