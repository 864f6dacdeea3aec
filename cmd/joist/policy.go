package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/snapshot"
)

// Exit codes of `joist policy check`.
const (
	policyOK        = 0
	policyWouldDeny = 1
	policyUsage     = 2
)

// runPolicy is `joist policy check -f <dir|file> ...`: the Guardrail report of a set of manifests,
// offline, with the functions the webhooks and the report controller run.
func runPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: joist policy check -f <dir|file> [-f ...]")
		return policyUsage
	}
	fs := flag.NewFlagSet("joist policy check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var paths stringList
	fs.Var(&paths, "f", "manifest file or directory (read recursively: *.yaml, *.yml, *.json); repeatable")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: joist policy check -f <dir|file> [-f ...]

Reports the objects (NodePools, Pods and workloads' pod templates, Nodes, NodeClaims) that the
Guardrails among the manifests, and Joist's built-in defaults, would deny in Deny mode, whatever
their enforcement. Exit code 0: nothing would be denied; 1: something would; 2: bad input.
NodePools are judged without a provider catalog (as the webhook does when none is available).`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return policyUsage
	}
	if len(paths) == 0 || fs.NArg() > 0 {
		fs.Usage()
		return policyUsage
	}
	m, err := loadManifests(paths)
	if err != nil {
		fmt.Fprintln(stderr, "joist policy check:", err)
		return policyUsage
	}
	if printPolicyReport(stdout, m.guardrails, policy.Report(m.guardrails, m.inventory)) {
		return policyWouldDeny
	}
	return policyOK
}

// printPolicyReport prints one section per Guardrail (name order) and one for the built-in
// defaults; it reports whether anything would be denied.
func printPolicyReport(w io.Writer, guardrails []policyv1alpha1.Guardrail, findings map[string][]policy.Finding) bool {
	gs := slices.Clone(guardrails)
	slices.SortFunc(gs, func(a, b policyv1alpha1.Guardrail) int { return strings.Compare(a.Name, b.Name) })
	type section struct {
		title    string
		findings []policy.Finding
	}
	var sections []section
	for i := range gs {
		sections = append(sections, section{fmt.Sprintf("%s (enforcement %s)", policy.SourceOf(&gs[i]), policy.EnforcementOf(&gs[i])), findings[gs[i].Name]})
	}
	sections = append(sections, section{fmt.Sprintf("built-in defaults (enforcement %s)", policy.BuiltInEnforcement(gs)), findings[""]})
	any := false
	for _, s := range sections {
		n, _, summary, objects := policy.StatusReport(s.findings, len(s.findings))
		if n == 0 {
			fmt.Fprintf(w, "%s: nothing would be denied\n", s.title)
			continue
		}
		any = true
		fmt.Fprintf(w, "%s: %d objects would be denied (%s)\n", s.title, n, summary)
		for _, o := range objects {
			name := o.Name
			if o.Namespace != "" {
				name = o.Namespace + "/" + o.Name
			}
			fmt.Fprintf(w, "  %s %s: %s: %s\n", o.Kind, name, o.Field, o.Message)
		}
	}
	return any
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// manifests are the objects `joist policy check` judges.
type manifests struct {
	guardrails []policyv1alpha1.Guardrail
	inventory  policy.Inventory
}

func loadManifests(paths []string) (*manifests, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	m := &manifests{inventory: policy.Inventory{NamespaceLabels: map[string]map[string]string{}}}
	for _, root := range paths {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || (path != root && !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(path))) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := m.addFile(scheme, data); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range m.inventory.Pods {
		ns := m.inventory.Pods[i].Namespace
		if _, ok := m.inventory.NamespaceLabels[ns]; !ok {
			m.inventory.NamespaceLabels[ns] = map[string]string{corev1.LabelMetadataName: ns}
		}
	}
	return m, nil
}

// addFile decodes every document of a YAML or JSON stream; kinds the report does not judge are skipped.
func (m *manifests) addFile(scheme *runtime.Scheme, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("document %d: %w", doc, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return fmt.Errorf("document %d: %w", doc, err)
			}
			for i := range list.Items {
				if err := m.add(scheme, &list.Items[i]); err != nil {
					return fmt.Errorf("document %d item %d: %w", doc, i, err)
				}
			}
			continue
		}
		if err := m.add(scheme, &u); err != nil {
			return fmt.Errorf("document %d (%s %q): %w", doc, u.GetKind(), u.GetName(), err)
		}
	}
}

func (m *manifests) add(scheme *runtime.Scheme, u *unstructured.Unstructured) error {
	obj, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil // a kind the report does not judge (Services, ConfigMaps, CRDs of other projects)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		return err
	}
	inv := &m.inventory
	switch o := obj.(type) {
	case *policyv1alpha1.Guardrail:
		m.guardrails = append(m.guardrails, *o)
	case *v1.NodePool:
		inv.NodePools = append(inv.NodePools, *o)
	case *v1.NodeClaim:
		inv.NodeClaims = append(inv.NodeClaims, *o)
	case *corev1.Node:
		inv.Nodes = append(inv.Nodes, *o)
	case *corev1.Namespace:
		labels := map[string]string{corev1.LabelMetadataName: o.Name}
		for k, v := range o.Labels {
			labels[k] = v
		}
		inv.NamespaceLabels[o.Name] = labels
	case *corev1.Pod:
		if o.Namespace == "" {
			o.Namespace = metav1.NamespaceDefault
		}
		inv.Pods = append(inv.Pods, *o)
	case *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *batchv1.Job:
		pods, err := snapshot.Expand(o)
		if err != nil {
			return err
		}
		if len(pods) > 0 { // one pod stands for the workload: its replicas are judged alike
			inv.Pods = append(inv.Pods, *podOfWorkload(pods[0], u))
		}
	case *appsv1.DaemonSet:
		inv.Pods = append(inv.Pods, *podOfTemplate(u, o.Spec.Template))
	case *batchv1.CronJob:
		inv.Pods = append(inv.Pods, *podOfTemplate(u, o.Spec.JobTemplate.Spec.Template))
	}
	return nil
}

// podOfWorkload names an expanded pod after its workload, so that the report names what to fix.
func podOfWorkload(pod *corev1.Pod, u *unstructured.Unstructured) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Name = strings.ToLower(u.GetKind()) + "/" + u.GetName()
	return pod
}

// podOfTemplate is the pod a DaemonSet or CronJob would create, owned by it.
func podOfTemplate(u *unstructured.Unstructured, t corev1.PodTemplateSpec) *corev1.Pod {
	ns := u.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: strings.ToLower(u.GetKind()) + "/" + u.GetName(), Namespace: ns, Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Controller: &yes}},
		},
		Spec: t.Spec,
	}
}
