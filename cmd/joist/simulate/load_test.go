package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// writeFiles creates files (relative path → content) in a temporary directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// load reads dir and builds the solver input against the default catalog.
func load(t *testing.T, dir string) (solver.Input, objects, error) {
	t.Helper()
	l := newLoader()
	if err := l.loadPaths([]string{dir}); err != nil {
		return solver.Input{}, l.objs, err
	}
	snap, err := buildInput(l.objs, catalog.Default())
	if err != nil {
		return solver.Input{}, l.objs, err
	}
	return snap.Input, l.objs, nil
}

const (
	pool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: kwok.joist.dev, kind: KWOKNodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]
  limits: {cpu: "100"}
`
	pod = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 500m}}}]
`
)

func deployment(name string, replicas string, requests string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, namespace: ns}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers: [{name: c, image: i, resources: {requests: ` + requests + `}}]
`
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "unknown kind",
			files: map[string]string{"a.yaml": pool + "---\napiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: web}\n"},
			want:  []string{"a.yaml:11: document 2 (Deploymnet web)", `unknown kind "Deploymnet" (apiVersion apps/v1); supported kinds are NodePool, NodeClaim, Guardrail, Pod`},
		},
		{
			name:  "malformed quantity in a pod",
			files: map[string]string{"a.yaml": strings.Replace(pod, "500m", "5 cores", 1)},
			want:  []string{"a.yaml:1: document 1 (Pod p)", `spec.containers[0].resources.requests.cpu: "5 cores" is not a quantity`},
		},
		{
			name:  "malformed quantity in a deployment template",
			files: map[string]string{"a.yaml": deployment("web", "2", "{memory: 1GB}")},
			want:  []string{"(Deployment ns/web)", `spec.template.spec.containers[0].resources.requests.memory: "1GB" is not a quantity`},
		},
		{
			// Each would cost seconds: parsing 1e-9999999, or any arithmetic on 1e9999999.
			name:  "quantity with a huge exponent in a deployment template",
			files: map[string]string{"a.yaml": deployment("web", "2", `{memory: "1e9999999"}`)},
			want:  []string{"(Deployment ns/web)", `spec.template.spec.containers[0].resources.requests.memory: "1e9999999" has an exponent beyond e±30`},
		},
		{
			name:  "quantity with a tiny exponent in a NodePool limit",
			files: map[string]string{"a.yaml": strings.Replace(pool, `cpu: "100"`, `cpu: "1e-9999999"`, 1)},
			want:  []string{"(NodePool default)", `spec.limits.cpu: "1e-9999999" has an exponent beyond e±30`},
		},
		{
			name:  "quantity text too long",
			files: map[string]string{"a.yaml": strings.Replace(pod, "500m", `"`+strings.Repeat("9", 70)+`"`, 1)},
			want:  []string{"(Pod p)", `spec.containers[0].resources.requests.cpu: "` + strings.Repeat("9", 70) + `" is longer than 64 characters`},
		},
		{
			name:  "malformed NodePool limit",
			files: map[string]string{"a.yaml": strings.Replace(pool, `cpu: "100"`, "cpu: lots", 1)},
			want:  []string{"(NodePool default)", `spec.limits.cpu: "lots" is not a quantity`},
		},
		{
			name:  "pod with no name",
			files: map[string]string{"a.yaml": strings.Replace(pod, "{name: p}", "{namespace: x}", 1)},
			want:  []string{"document 1 (Pod x/<no name>): metadata.name is required"},
		},
		{
			name:  "unknown NodePool field",
			files: map[string]string{"a.yaml": strings.Replace(pool, "requirements:", "requirementz:", 1)},
			want:  []string{"(NodePool default)", `unknown field "spec.template.spec.requirementz"`},
		},
		{
			name:  "unknown pod field",
			files: map[string]string{"a.yaml": strings.Replace(pod, "containers:", "containerz:", 1)},
			want:  []string{"(Pod p)", `unknown field "spec.containerz"`},
		},
		{
			name:  "wrong type",
			files: map[string]string{"a.yaml": deployment("web", "two", "{cpu: 1}")},
			want:  []string{"(Deployment ns/web)", "spec.replicas"},
		},
		{
			name:  "missing apiVersion",
			files: map[string]string{"a.yaml": "kind: Pod\nmetadata: {name: p}\n"},
			want:  []string{"(Pod p): apiVersion is required"},
		},
		{
			name:  "missing kind",
			files: map[string]string{"a.yaml": "apiVersion: v1\nmetadata: {name: p}\n"},
			want:  []string{"document 1: kind is required"},
		},
		{
			name:  "not YAML",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: [\n"},
			want:  []string{"a.yaml:1: document 1: not valid YAML or JSON"},
		},
		{
			name:  "pod without containers",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n"},
			want:  []string{"(Pod p): spec.containers is empty"},
		},
		{
			name:  "negative replicas",
			files: map[string]string{"a.yaml": deployment("web", "-1", "{cpu: 1}")},
			want:  []string{"(Deployment ns/web): replica count -1 is negative"},
		},
		{
			name:  "pod bound to an unknown node",
			files: map[string]string{"a.yaml": strings.Replace(pod, "spec:\n", "spec:\n  nodeName: nowhere\n", 1)},
			want:  []string{"(Pod p)", `spec.nodeName "nowhere" names no Node in the input`},
		},
		{
			name:  "duplicate pod",
			files: map[string]string{"a.yaml": pod, "b.yaml": pod},
			want:  []string{"b.yaml:1: document 1 (Pod p): pod default/p is defined twice (first at ", "a.yaml:1"},
		},
		{
			name:  "duplicate NodePool",
			files: map[string]string{"a.yaml": pool + "---\n" + pool},
			want:  []string{"document 2 (NodePool default): NodePool default is defined twice"},
		},
		{
			name:  "node without allocatable",
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n"},
			want:  []string{"(Node node-1): status.allocatable is required"},
		},
		{
			name:  "no input files",
			files: map[string]string{"README.md": "hi"},
			want:  []string{"holds no .yaml, .yml or .json files"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := load(t, writeFiles(t, tt.files))
			if err == nil {
				t.Fatalf("load succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadExpandsWorkloads(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"pools/pool.yaml": pool,
		"apps.yml": deployment("web", "3", "{cpu: 250m}") + "---\n" + deployment("idle", "0", "{cpu: 1}") + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: single}
spec:
  selector: {matchLabels: {app: single}}
  template:
    metadata: {labels: {app: single}}
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 5
  completions: 2
  template:
    metadata: {labels: {team: data}}
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: i}]}
  volumeClaimTemplates: [{metadata: {name: data}}]
`,
		"list.json": `{"apiVersion": "v1", "kind": "List", "items": [` +
			`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "from-list"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},` +
			`{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}}]}`,
	})
	in, objs, err := load(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		names = append(names, p.Namespace+"/"+p.Name)
		byName[p.Name] = p
		if p.UID == "" {
			t.Errorf("pod %s has no UID", p.Name)
		}
	}
	// Files in lexical order: apps.yml, list.json, pools/pool.yaml; explicit pods before workloads.
	hash := byName["web-"+in.Pods[1].Labels["pod-template-hash"]+"-0"]
	if hash == nil {
		t.Fatalf("no web-<hash>-0 pod among %v", names)
	}
	want := []string{"default/from-list", "ns/web-" + hash.Labels["pod-template-hash"] + "-0", "ns/web-" + hash.Labels["pod-template-hash"] + "-1",
		"ns/web-" + hash.Labels["pod-template-hash"] + "-2", "default/single-" + byName["single-"+in.Pods[4].Labels["pod-template-hash"]+"-0"].Labels["pod-template-hash"] + "-0",
		"default/j-0", "default/j-1", "default/db-0", "default/db-1"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("pods = %v\nwant   %v", names, want)
	}
	web := in.Pods[1]
	if web.Labels["app"] != "web" || web.OwnerReferences[0].Kind != "ReplicaSet" || web.Status.Phase != corev1.PodPending {
		t.Errorf("web pod = labels %v owner %v phase %s", web.Labels, web.OwnerReferences, web.Status.Phase)
	}
	if got := web.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("250m")) != 0 {
		t.Errorf("web cpu request = %s", got.String())
	}
	if j := byName["j-0"]; j.Labels["team"] != "data" || j.Labels["batch.kubernetes.io/job-name"] != "j" {
		t.Errorf("job pod labels = %v", j.Labels)
	}
	if db := byName["db-1"]; len(db.Spec.Volumes) != 1 || db.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-1" {
		t.Errorf("db-1 volumes = %+v, want claim data-db-1", db.Spec.Volumes)
	}
	if len(objs.ignored) != 1 || objs.ignored[0].kind != "Service" || !strings.Contains(objs.ignored[0].String(), "list.json:1: document 1 items[1] (Service svc)") {
		t.Errorf("ignored = %v, want the Service from the List", objs.ignored)
	}
	if len(in.NodePools) != 1 || len(in.NodePools[0].InstanceTypes) != len(catalog.Default()) {
		t.Errorf("node pools = %+v", in.NodePools)
	}
}

func TestLoadExistingNodesLimitsAndVolumes(t *testing.T) {
	dir := writeFiles(t, map[string]string{"all.yaml": pool + `---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {karpenter.sh/nodepool: default}}
spec: {taints: [{key: dedicated, value: x, effect: NoSchedule}]}
status: {capacity: {cpu: "8", memory: 32Gi}, allocatable: {cpu: 7800m, memory: 30Gi, pods: "110"}}
---
` + strings.Replace(pod, "spec:\n", "spec:\n  nodeName: n1\n", 1) + `---
apiVersion: v1
kind: Node
metadata: {name: cordoned}
spec: {unschedulable: true}
status: {allocatable: {cpu: "8"}}
---
apiVersion: v1
kind: Pod
metadata: {name: on-cordoned}
spec: {nodeName: cordoned, containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec: {nodeName: n1, containers: [{name: c, image: i}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop}
spec:
  containers: [{name: c, image: i}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data-db-0}}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: shop, name: data-db-0}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-b]}]}]
---
apiVersion: kwok.joist.dev/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [all.yaml]
`})
	in, objs, err := load(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Pods) != 1 || in.Pods[0].Name != "db-0" {
		t.Errorf("pending pods = %d, want only db-0 (the others are bound or done)", len(in.Pods))
	}
	if len(in.Nodes) != 1 || len(in.Nodes[0].Pods) != 1 || in.Nodes[0].NodePool != "default" || len(in.Nodes[0].Taints) != 1 {
		t.Fatalf("nodes = %+v", in.Nodes)
	}
	if h := in.Nodes[0].Labels["kubernetes.io/hostname"]; h != "n1" {
		t.Errorf("hostname label = %q, want it defaulted to the node name", h)
	}
	if cpu := in.Nodes[0].Allocatable[corev1.ResourceCPU]; cpu.MilliValue() != 7800 {
		t.Errorf("allocatable cpu = %s, want 7800m", cpu.String())
	}
	if r := in.NodePools[0].Remaining[corev1.ResourceCPU]; r.Value() != 92 {
		t.Errorf("remaining cpu = %s, want 100 - 8 = 92", r.String())
	}
	if z := in.VolumeZones["shop/data-db-0"]; len(z) != 1 || z[0] != "test-zone-b" {
		t.Errorf("volume zones = %v", in.VolumeZones)
	}
	if len(objs.ignored) != 2 || objs.ignored[0].kind != "KWOKNodeClass" || objs.ignored[1].kind != "Kustomization" {
		t.Errorf("ignored = %v", objs.ignored)
	}
}

func TestSplitDocuments(t *testing.T) {
	docs := splitDocuments([]byte("# header\n---\napiVersion: v1\nkind: A\n---   \n# only a comment\n--- # trailing\n\nkind: B\n"))
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2: %+v", len(docs), docs)
	}
	if docs[0].line != 3 || docs[0].n != 1 || docs[1].line != 9 || docs[1].n != 2 {
		t.Errorf("documents = (line %d, n %d), (line %d, n %d); want (3, 1), (9, 2)", docs[0].line, docs[0].n, docs[1].line, docs[1].n)
	}
}
