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

// Tenancy: namespace shop is bound to NodePool team-a. Its pod runs on node-a (team-a, the pricier
// type); node-b (general, cheaper) runs a pod of an unbound namespace. Unconfined, the plan would
// remove the pricier node-a and move the shop pod onto node-b, a pool shop may not use; confined as
// the provisioner confines pending pods, only node-b can go.
func TestConsolidationWhatIfConfinesTenants(t *testing.T) {
	pool := func(name, instanceType string) string {
		return `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: ` + name + `}
spec:
  template:
    spec:
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [` + instanceType + `]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      nodeClassRef: {group: kwok.joist.dev, kind: KWOKNodeClass, name: default}
  disruption:
    budgets: [{nodes: "100%"}]
`
	}
	node := func(name, pool, instanceType, ns string) string {
		return `---
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {karpenter.sh/nodepool: ` + pool + `, karpenter.sh/capacity-type: on-demand, kubernetes.io/arch: amd64, kubernetes.io/os: linux, node.kubernetes.io/instance-type: ` + instanceType + `, topology.kubernetes.io/zone: test-zone-a}
status:
  allocatable: {cpu: 3920m, memory: 7Gi, pods: "64"}
---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `-app, namespace: ` + ns + `}
spec:
  nodeName: ` + name + `
  containers: [{name: app, image: app, resources: {requests: {cpu: 1500m, memory: 1Gi}}}]
`
	}
	const guardrail = `---
apiVersion: policy.joist.dev/v1alpha1
kind: Guardrail
metadata: {name: teams}
spec:
  nodePoolBindings:
  - namespaceSelector: {matchLabels: {team: a}}
    nodePools: [team-a]
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: a}}
`
	run := func(input string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(input), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"-f", dir, "--consolidate"}, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		return stdout.String()
	}
	base := pool("team-a", "m-4x-amd64-linux") + pool("general", "c-4x-amd64-linux") +
		node("node-a", "team-a", "m-4x-amd64-linux", "shop") + node("node-b", "general", "c-4x-amd64-linux", "misc")
	if out := run(base); !regexp.MustCompile(`1\s+Underutilized\s+node-a\s`).MatchString(out) {
		t.Fatalf("without a binding the pricier node-a should go:\n%s", out)
	}
	// With the binding, shop's pod may only run on team-a (so node-a stays) and team-a is reserved
	// for shop (so misc's pod cannot move onto node-a either): nothing may go.
	out := run(base + guardrail)
	if strings.Contains(out, "Underutilized") || !strings.Contains(out, "No disruption") {
		t.Errorf("with shop bound to team-a (and team-a reserved for it), no node may go:\n%s", out)
	}
}

// The what-if takes the manager's consolidation settings as flags (the solver's tests cover what
// they do); an out-of-range minimum is a usage error.
func TestConsolidationWhatIfSettingsFlags(t *testing.T) {
	dir := t.TempDir()
	// node-a and node-b each run 1.5 of 3.92 cpu; merging them saves one node (50 % of the price).
	input := whatIfPool + whatIfNode("node-a", "") + whatIfNode("node-b", "")
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"--consolidation-min-savings=0", "--spot-to-spot-consolidation"}, 1},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"-f", dir, "--consolidate"}, tc.args...), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		if got := strings.Count(stdout.String(), "Underutilized"); got != tc.want {
			t.Errorf("%v: %d commands, want %d:\n%s", tc.args, got, tc.want, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-f", dir, "--consolidate", "--consolidation-min-savings=1.5"}, &stdout, &stderr); code != 2 {
		t.Errorf("an out-of-range minimum must be a usage error, got exit %d", code)
	}
}
