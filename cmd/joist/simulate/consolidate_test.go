package simulate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const whatIfPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m-4x-amd64-linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      nodeClassRef: {group: kwok.joist.dev, kind: KWOKNodeClass, name: default}
  disruption:
    budgets: [{nodes: "100%"}]
`

func whatIfNode(name, podAnnotations string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  labels: {karpenter.sh/nodepool: general, karpenter.sh/capacity-type: on-demand, kubernetes.io/arch: amd64, kubernetes.io/os: linux, node.kubernetes.io/instance-type: m-4x-amd64-linux, topology.kubernetes.io/zone: test-zone-a}
status:
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "64"}
---
apiVersion: v1
kind: Pod
metadata: {name: %[1]s-app, namespace: shop, annotations: {%[2]s}}
spec:
  nodeName: %[1]s
  containers: [{name: app, image: app, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
`, name, podAnnotations)
}

func TestConsolidationWhatIf(t *testing.T) {
	dir := t.TempDir()
	input := whatIfPool + whatIfNode("node-a", "") + whatIfNode("node-b", "") + whatIfNode("node-c", `karpenter.sh/do-not-disrupt: "true"`)
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", dir, "--consolidate"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	// node-a and node-b each run 1.5 of 3.92 cpu: one of them goes, its pod moves to the other.
	// node-c is held by its do-not-disrupt pod.
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`1\s+Underutilized\s+node-[ab]\s+-\s+0\.1912`),
		regexp.MustCompile(`node-c\s+pod shop/node-c-app has karpenter.sh/do-not-disrupt`),
		regexp.MustCompile(`node-[ab]\s+no cheaper arrangement of its pods was found`),
		regexp.MustCompile(`Cost:\s+\$0\.5736/h → \$0\.3824/h \(saves \$0\.1912/h\)`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "Underutilized") != 1 {
		t.Errorf("want exactly one command:\n%s", out)
	}
}

// The dump's NodeClaims count as the controller counts them: node-a's claim carries a
// do-not-disrupt duration still running, node-b's claim is not initialized, so neither may go, and
// the what-if names the claim (or the condition) that keeps each.
func TestConsolidationWhatIfReadsNodeClaims(t *testing.T) {
	claim := func(node, annotations string, initialized bool) string {
		cond := ""
		if initialized {
			cond = `
  conditions:
  - {type: Initialized, status: "True", reason: Initialized, message: "", lastTransitionTime: "2026-01-01T00:00:00Z"}`
		}
		return `---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: claim-` + node + `
  labels: {karpenter.sh/nodepool: general}
  annotations: {` + annotations + `}
  creationTimestamp: "2099-01-01T00:00:00Z"
spec:
  nodeClassRef: {group: kwok.joist.dev, kind: KWOKNodeClass, name: default}
  requirements: []
status:
  nodeName: ` + node + cond + "\n"
	}
	dir := t.TempDir()
	input := whatIfPool + whatIfNode("node-a", "") + whatIfNode("node-b", "") + whatIfNode("node-c", "") +
		claim("node-a", `karpenter.sh/do-not-disrupt: "1000000h"`, true) + claim("node-b", "", false)
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", dir, "--consolidate"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`node-a\s+nodeclaim claim-node-a has karpenter.sh/do-not-disrupt until`),
		regexp.MustCompile(`node-b\s+the node is not initialized`),
		regexp.MustCompile(`1\s+Underutilized\s+node-c\s`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
