package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/hack/bundle"
)

// bundleOptions must match the Makefile's bundle target (VERSION, IMG, package and channel).
var bundleOptions = bundle.Options{Version: "0.1.0", Image: "ghcr.io/joist-dev/joist:v0.1.0", Package: "joist", Channel: "candidate"}

// registryV1Kinds are the kinds OLM v0 installs from a registry+v1 bundle (operator-registry's
// supported resources), less the OpenShift console kinds Joist has no use for.
var registryV1Kinds = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true, "Secret": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "ConfigMap": true, "ServiceAccount": true, "Service": true, "Role": true,
	"RoleBinding": true, "PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true,
}

// TestBundleValidates loads bundle/ as OLM does and runs operator-framework/api's default bundle
// validators plus OperatorHub, object (PDB) and good-practices validators: no errors, no warnings.
func TestBundleValidates(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "bundle")
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		t.Fatalf("loading bundle: %v", err)
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator, validation.StandardCategoriesValidator,
		validation.ObjectValidator, validation.GoodPracticesValidator)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": "1.37"})
	var report []string
	for _, r := range validators.Validate(objs...) {
		for _, e := range r.Errors {
			t.Errorf("%s: error: %s", r.Name, e.Error())
			report = append(report, "ERROR "+r.Name+": "+e.Error())
		}
		for _, w := range r.Warnings {
			t.Errorf("%s: warning: %s", r.Name, w.Error())
			report = append(report, "WARN "+r.Name+": "+w.Error())
		}
	}
	t.Logf("validated %s (%d CRDs, %d other objects): %d findings %v", b.CSV.Name, len(b.V1CRDs), len(b.Objects), len(report), report)

	if got := len(b.V1CRDs); got != 7 {
		t.Errorf("bundle has %d CRDs, want 7 (NodePool, NodeClaim, KWOKNodeClass, KWOKInstance, EC2NodeClass, AKSNodeClass, Guardrail)", got)
	}
	for _, o := range b.Objects {
		if !registryV1Kinds[o.GetKind()] {
			t.Errorf("bundle ships %s %s: not a kind registry+v1 bundles support", o.GetKind(), o.GetName())
		}
	}
	checkCSV(t, b.CSV)
}

// checkCSV asserts what the generator derives from config/: install strategy, permissions,
// webhook definitions and examples.
func checkCSV(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	if !strings.Contains(csv.Annotations["alm-examples"], `"kind": "NodePool"`) {
		t.Error("alm-examples has no NodePool example")
	}
	modes := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		modes[m.Type] = m.Supported
	}
	if !modes[operatorsv1alpha1.InstallModeTypeAllNamespaces] || modes[operatorsv1alpha1.InstallModeTypeOwnNamespace] {
		t.Errorf("installModes = %v, want AllNamespaces only", csv.Spec.InstallModes)
	}
	spec := csv.Spec.InstallStrategy.StrategySpec
	if len(spec.DeploymentSpecs) != 1 || spec.DeploymentSpecs[0].Name != "joist-controller-manager" {
		t.Fatalf("deployments = %+v, want joist-controller-manager", spec.DeploymentSpecs)
	}
	pod := spec.DeploymentSpecs[0].Spec.Template.Spec
	if pod.Containers[0].Image != bundleOptions.Image {
		t.Errorf("manager image = %s, want %s", pod.Containers[0].Image, bundleOptions.Image)
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			t.Errorf("deployment mounts secret %s: OLM provisions webhook certificates itself", v.Secret.SecretName)
		}
	}
	var nodeclaimWrite, tokenReview, leases bool
	for _, p := range spec.ClusterPermissions {
		for _, r := range p.Rules {
			nodeclaimWrite = nodeclaimWrite || (contains(r.Resources, "nodeclaims") && contains(r.Verbs, "create"))
			tokenReview = tokenReview || contains(r.Resources, "tokenreviews")
		}
	}
	for _, p := range spec.Permissions {
		for _, r := range p.Rules {
			leases = leases || contains(r.Resources, "leases")
		}
	}
	if !nodeclaimWrite || !tokenReview || !leases {
		t.Errorf("permissions miss rules: nodeclaims create %v, tokenreviews %v, leases (namespaced) %v", nodeclaimWrite, tokenReview, leases)
	}
	want := map[string]string{ // generateName → path
		"mpod.policy.joist.dev": "/mutate--v1-pod", "vpod.policy.joist.dev": "/validate--v1-pod",
		"vnode.policy.joist.dev": "/validate--v1-node", "vnodeclaim.policy.joist.dev": "/validate-karpenter-sh-v1-nodeclaim",
		"vnodepool.policy.joist.dev": "/validate-karpenter-sh-v1-nodepool", "vguardrail.policy.joist.dev": "/validate-policy-joist-dev-v1alpha1-guardrail",
	}
	for _, w := range csv.Spec.WebhookDefinitions {
		path, ok := want[w.GenerateName]
		if !ok || w.WebhookPath == nil || *w.WebhookPath != path {
			t.Errorf("webhook %s path %v, want %s", w.GenerateName, w.WebhookPath, path)
		}
		if w.TargetPort == nil || w.TargetPort.IntValue() != 9443 || w.DeploymentName != "joist-controller-manager" || w.SideEffects == nil || w.FailurePolicy == nil {
			t.Errorf("webhook %s: targetPort %v deployment %q sideEffects %v failurePolicy %v", w.GenerateName, w.TargetPort, w.DeploymentName, w.SideEffects, w.FailurePolicy)
		}
		delete(want, w.GenerateName)
	}
	if len(want) > 0 {
		t.Errorf("webhookdefinitions miss %v", want)
	}
}

// TestBundleUpToDate regenerates the bundle from config/ and compares it with the committed bundle/
// and bundle.Dockerfile: `make bundle` output never drifts from what is committed.
func TestBundleUpToDate(t *testing.T) {
	root := repoRoot(t)
	opts := bundleOptions
	opts.ConfigDir = filepath.Join(root, "config")
	files, err := bundle.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]bool{}
	err = filepath.WalkDir(filepath.Join(root, "bundle"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(root, "bundle"), path)
		committed[rel] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		got, err := os.ReadFile(filepath.Join(root, "bundle", p))
		if err != nil || !bytes.Equal(got, files[p]) {
			t.Errorf("bundle/%s is stale or missing: run `make bundle` and commit", p)
		}
		delete(committed, p)
	}
	for p := range committed {
		t.Errorf("bundle/%s is not generated by `make bundle`: remove it", p)
	}
	df, err := os.ReadFile(filepath.Join(root, "bundle.Dockerfile"))
	if err != nil || !bytes.Contains(df, []byte("LABEL operators.operatorframework.io.bundle.package.v1=joist")) {
		t.Errorf("bundle.Dockerfile is stale or missing: run `make bundle`")
	}
	var ann struct{ Annotations map[string]string }
	if err := yaml.Unmarshal(files["metadata/annotations.yaml"], &ann); err != nil || ann.Annotations["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" {
		t.Errorf("metadata/annotations.yaml: %v %v", ann, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
