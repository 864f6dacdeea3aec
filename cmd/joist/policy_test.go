package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const policyPools = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: bounded}
spec:
  limits: {cpu: "100"}
  template:
    spec:
      nodeClassRef: {group: kwok.joist.dev, kind: KWOKNodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: team, operator: In, values: [a]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: unbounded}
spec:
  template:
    spec:
      nodeClassRef: {group: kwok.joist.dev, kind: KWOKNodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: team, operator: In, values: [b]}
`

const policyGuardrail = `apiVersion: policy.joist.dev/v1alpha1
kind: Guardrail
metadata: {name: migration}
spec:
  enforcement: Audit
  builtInEnforcement: Audit
  nodePools:
    maxLimits: {limits: {cpu: "50"}}
`

const policyWorkload = `apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata:
      labels: {app: api}
      annotations: {karpenter.sh/do-not-disrupt: "soon"}
    spec:
      containers: [{name: api, image: api}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ignored}
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPolicyCheck(t *testing.T) {
	dir := writeFiles(t, map[string]string{"pools.yaml": policyPools, "policy/guardrail.yaml": policyGuardrail, "apps/web.yml": policyWorkload, "README.md": "not a manifest"})
	var out, errOut bytes.Buffer
	code := runPolicy([]string{"check", "-f", dir}, &out, &errOut)
	if code != policyWouldDeny {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, policyWouldDeny, errOut.String())
	}
	want := `Guardrail "migration" (enforcement Audit): 2 objects would be denied (nodePools.maxLimits=2)
  NodePool bounded: spec.limits[cpu]: rule nodePools.maxLimits (Guardrail "migration"): spec.limits.cpu is 100, above the per-pool ceiling 50; fix: lower spec.limits.cpu to at most 50, or split the capacity across several pools
  NodePool unbounded: spec.limits[cpu]: rule nodePools.maxLimits (Guardrail "migration"): NodePool "unbounded" sets no cpu limit, but each pool may hold at most 50; fix: set spec.limits.cpu to at most 50
built-in defaults (enforcement Audit): 2 objects would be denied (doNotDisrupt=1 nodePools.requireLimits=1)
  NodePool unbounded: spec.limits: rule nodePools.requireLimits (built-in default): NodePool "unbounded" sets no limit (cpu, memory or nodes), so it can grow without bound while pods are pending; fix: set at least one of spec.limits.cpu, spec.limits.memory or spec.limits.nodes to the most this pool may ever hold, e.g. cpu: "1000"
  Pod web/deployment/api: metadata.annotations[karpenter.sh/do-not-disrupt]: rule doNotDisrupt (built-in default):`
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("report:\n%s\nwant it to start with:\n%s", out.String(), want)
	}
}

func TestPolicyCheckClean(t *testing.T) {
	dir := writeFiles(t, map[string]string{"pools.yaml": strings.SplitN(policyPools, "---\n", 2)[0]})
	var out, errOut bytes.Buffer
	if code := runPolicy([]string{"check", "-f", dir}, &out, &errOut); code != policyOK {
		t.Fatalf("exit code %d, want 0; stdout:\n%s", code, out.String())
	}
	if want := "built-in defaults (enforcement Deny): nothing would be denied\n"; out.String() != want {
		t.Errorf("report %q, want %q", out.String(), want)
	}
}

func TestPolicyCheckBadInput(t *testing.T) {
	dir := writeFiles(t, map[string]string{"bad.yaml": "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weight: heavy}\n"})
	var out, errOut bytes.Buffer
	if code := runPolicy([]string{"check", "-f", dir}, &out, &errOut); code != policyUsage {
		t.Fatalf("exit code %d, want %d", code, policyUsage)
	}
	if !strings.Contains(errOut.String(), "bad.yaml: document 1 (NodePool \"x\")") {
		t.Errorf("stderr %q should name the file, document and object", errOut.String())
	}
	if code := runPolicy([]string{"check"}, &out, &errOut); code != policyUsage {
		t.Errorf("no -f: exit code %d, want %d", code, policyUsage)
	}
}
