// Package scenario reads a scenario directory of the realistic-p kind (../shared/scenarios/realistic-p:
// manifests/*.yaml holding NodePools, DaemonSets and Pods, and catalog.yaml) into the snapshot the
// provisioner would build, as `joist simulate` does: objects without a namespace are in "default" and
// pods get the stable UID the CLI gives them. The solver's quality tests and bench/upstream's
// -scenarios both read inputs through it, so they plan the same pods.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
)

// Load reads the scenario in dir and builds its snapshot over its own catalog.
func Load(dir string) (solver.Input, error) {
	c, its, err := Read(dir)
	if err != nil {
		return solver.Input{}, err
	}
	return Build(c, its)
}

// Read reads the scenario's objects and catalog.
func Read(dir string) (snapshot.Cluster, []*catalog.InstanceType, error) {
	var c snapshot.Cluster
	raw, err := os.ReadFile(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		return c, nil, err
	}
	its, err := catalog.Parse(raw)
	if err != nil {
		return c, nil, fmt.Errorf("catalog of %s: %w", dir, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	for _, f := range files {
		if err := readManifest(f, &c); err != nil {
			return c, nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return c, its, nil
}

// decodeStrict decodes one manifest document as a T, refusing fields T does not have.
func decodeStrict[T any](js []byte) (*T, error) {
	obj := new(T)
	if err := yaml.UnmarshalStrict(js, obj); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", obj, err)
	}
	return obj, nil
}

// readManifest adds the NodePools, DaemonSets and Pods of one manifest file to c.
func readManifest(file string, c *snapshot.Cluster) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if doc == nil {
			continue
		}
		js, _ := yaml.Marshal(doc)
		switch doc["kind"] {
		case "NodePool":
			np, err := decodeStrict[v1.NodePool](js)
			if err != nil {
				return err
			}
			c.NodePools = append(c.NodePools, np)
		case "DaemonSet":
			ds, err := decodeStrict[appsv1.DaemonSet](js)
			if err != nil {
				return err
			}
			ds.Namespace = orDefault(ds.Namespace)
			c.DaemonSets = append(c.DaemonSets, ds)
		case "Pod":
			p, err := decodeStrict[corev1.Pod](js)
			if err != nil {
				return err
			}
			p.Namespace = orDefault(p.Namespace)
			if p.UID == "" {
				p.UID = snapshot.StableUID("pod", p.Namespace, p.Name)
			}
			c.Pods = append(c.Pods, p)
		default:
			return fmt.Errorf("kind %v is not read by this loader", doc["kind"])
		}
	}
}

// Build is the snapshot of c over the catalog its.
func Build(c snapshot.Cluster, its []*catalog.InstanceType) (solver.Input, error) {
	snap, err := snapshot.Build(c, snapshot.Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }})
	if err != nil {
		return solver.Input{}, fmt.Errorf("snapshot: %w", err)
	}
	return snap.Input, nil
}

func orDefault(ns string) string {
	if ns == "" {
		return corev1.NamespaceDefault
	}
	return ns
}
