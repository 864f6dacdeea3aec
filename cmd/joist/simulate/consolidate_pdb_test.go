package simulate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/joist-dev/joist/disruptionpolicy/pdbcases"
)

func yamlDoc(t *testing.T, obj any) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return "---\n" + string(b)
}

func whatIfPod(p *corev1.Pod) *corev1.Pod {
	p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return p
}

// TestConsolidationWhatIfPDBCases runs the shared PDB table through `joist simulate --consolidate`:
// node-a runs the case's pod, node-b a pod no PDB covers; with room for one of them to go, node-a
// is kept by exactly the PDB the case names, or consolidation may take it.
func TestConsolidationWhatIfPDBCases(t *testing.T) {
	for _, tc := range pdbcases.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			input := whatIfPool + nodeDoc("node-a") + nodeDoc("node-b")
			input += yamlDoc(t, whatIfPod(tc.NewPod("web-0", "node-a")))
			other := pdbcases.Case{}.NewPod("misc-0", "node-b")
			other.Namespace = "misc"
			input += yamlDoc(t, whatIfPod(other))
			for i := range tc.PDBs {
				b := tc.PDBs[i]
				b.TypeMeta = metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}
				input += yamlDoc(t, &b)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(input), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := Main([]string{"-f", dir, "--consolidate"}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			if strings.Count(out, "Underutilized") != 1 {
				t.Fatalf("want exactly one command:\n%s", out)
			}
			keptA := regexp.MustCompile(`(?m)^node-a\s+(.*)$`).FindStringSubmatch(out)
			if tc.BlockedBy == "" {
				if keptA != nil && strings.Contains(keptA[1], "PodDisruptionBudget") {
					t.Errorf("node-a kept by a PDB, want none:\n%s", out)
				}
				return
			}
			if keptA == nil || !strings.Contains(keptA[1], "PodDisruptionBudget") || !strings.Contains(keptA[1], tc.BlockedBy) {
				t.Errorf("want node-a kept by PodDisruptionBudget %s:\n%s", tc.BlockedBy, out)
			}
			if !regexp.MustCompile(`1\s+Underutilized\s+node-b\s`).MatchString(out) {
				t.Errorf("want node-b consolidated onto node-a:\n%s", out)
			}
		})
	}
}

func nodeDoc(name string) string {
	return `---
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {karpenter.sh/nodepool: general, karpenter.sh/capacity-type: on-demand, kubernetes.io/arch: amd64, kubernetes.io/os: linux, node.kubernetes.io/instance-type: m-4x-amd64-linux, topology.kubernetes.io/zone: test-zone-a}
status:
  allocatable: {cpu: 3920m, memory: 14Gi, pods: "64"}
`
}
