package solver_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
)

// loadScenario reads a family-p input (manifests/*.yaml holding NodePools, DaemonSets and Pods,
// and catalog.yaml) into the snapshot the provisioner would build, as `joist simulate` does:
// objects without a namespace are in "default" and pods get the stable UID the CLI gives them. It
// lives here so the solver's tests import no command package.
func loadScenario(tb testing.TB, dir string) solver.Input {
	tb.Helper()
	c, its := readScenario(tb, dir)
	return buildScenario(tb, c, its)
}

// readScenario reads a family-p input's objects and catalog.
func readScenario(tb testing.TB, dir string) (snapshot.Cluster, []*catalog.InstanceType) {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	its, err := catalog.Parse(raw)
	if err != nil {
		tb.Fatalf("catalog: %v", err)
	}
	var c snapshot.Cluster
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			if doc == nil {
				continue
			}
			js, _ := yaml.Marshal(doc)
			switch doc["kind"] {
			case "NodePool":
				np := &v1.NodePool{}
				mustUnmarshal(tb, js, np)
				c.NodePools = append(c.NodePools, np)
			case "DaemonSet":
				ds := &appsv1.DaemonSet{}
				mustUnmarshal(tb, js, ds)
				ds.Namespace = orDefault(ds.Namespace)
				c.DaemonSets = append(c.DaemonSets, ds)
			case "Pod":
				p := &corev1.Pod{}
				mustUnmarshal(tb, js, p)
				p.Namespace = orDefault(p.Namespace)
				if p.UID == "" {
					p.UID = snapshot.StableUID("pod", p.Namespace, p.Name)
				}
				c.Pods = append(c.Pods, p)
			default:
				tb.Fatalf("%s: kind %v is not read by this loader", f, doc["kind"])
			}
		}
	}
	return c, its
}

// buildScenario is the snapshot of c over the catalog its.
func buildScenario(tb testing.TB, c snapshot.Cluster, its []*catalog.InstanceType) solver.Input {
	tb.Helper()
	snap, err := snapshot.Build(c, snapshot.Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }})
	if err != nil {
		tb.Fatal(err)
	}
	return snap.Input
}

func mustUnmarshal(tb testing.TB, js []byte, into any) {
	tb.Helper()
	if err := yaml.UnmarshalStrict(js, into); err != nil {
		tb.Fatalf("decoding %T: %v", into, err)
	}
}

func orDefault(ns string) string {
	if ns == "" {
		return corev1.NamespaceDefault
	}
	return ns
}
