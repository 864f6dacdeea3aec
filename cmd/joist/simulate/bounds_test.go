package simulate

import (
	"strings"
	"testing"
)

func TestInputBounds(t *testing.T) {
	deployment := func(name, replicas string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: ` + replicas + `
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]}
`
	}
	job := `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 2000000000
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
`
	cases := []struct {
		name, want string
		files      map[string]string
	}{
		{"one huge deployment", "spec.replicas is 2000000000: joist simulate expands at most 200000 pods; lower spec.replicas",
			map[string]string{"a.yaml": pool + "---\n" + deployment("big", "2000000000")}},
		{"huge job", "spec.parallelism is 2000000000", map[string]string{"a.yaml": pool + "---\n" + job}},
		{"many deployments adding up", "the input expands to more than 200000 pods",
			map[string]string{"a.yaml": pool + "---\n" + deployment("a", "150000") + "---\n" + deployment("b", "60000")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := load(t, writeFiles(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("within bounds loads", func(t *testing.T) {
		in, _, err := load(t, writeFiles(t, map[string]string{"a.yaml": pool + "---\n" + deployment("a", "1000")}))
		if err != nil {
			t.Fatal(err)
		}
		if len(in.Pods) != 1000 {
			t.Fatalf("%d pods, want 1000", len(in.Pods))
		}
	})
}
