package simulate

import (
	"testing"

	"github.com/joist-dev/joist/catalog"
)

// FuzzLoadDocument feeds the simulate loader arbitrary manifests: no panic, input within MaxPods,
// and whatever loads builds a solver input.
func FuzzLoadDocument(f *testing.F) {
	f.Add([]byte(pool))
	f.Add([]byte(pod))
	f.Add([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 3\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 1e21, memory: 10Pi}}}]}\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: j}\n  spec: {parallelism: 2, completions: 1, template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}\n"))
	f.Add([]byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  replicas: -4\n  template: {spec: {containers: [{name: c}]}}\n"))
	base := newLoader()
	types := catalog.Default()[:4]
	f.Fuzz(func(t *testing.T, data []byte) {
		l := &loader{decoder: base.decoder}
		for _, d := range splitDocuments(data) {
			if err := l.loadDocument(source{file: "fuzz.yaml", line: d.line, doc: d.n, item: -1}, d.data); err != nil {
				return
			}
		}
		if l.pods > MaxPods {
			t.Fatalf("loader accepted %d pods, more than MaxPods", l.pods)
		}
		if l.pods > 2000 {
			return // valid, but too slow to expand thousands of times a second
		}
		_, _ = buildInput(l.objs, types)
	})
}
