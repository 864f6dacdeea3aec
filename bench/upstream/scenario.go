package main

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

// loadScenario reads a scenario directory of the realistic-p kind (manifests/*.yaml holding
// NodePools, DaemonSets and Pods, and catalog.yaml) into the snapshot the provisioner would
// build, as `joist simulate` does (and the solver's quality tests): objects without a namespace
// are in "default" and pods get the stable UID the CLI gives them.
func loadScenario(dir string) (solver.Input, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		return solver.Input{}, err
	}
	its, err := catalog.Parse(raw)
	if err != nil {
		return solver.Input{}, fmt.Errorf("catalog of %s: %w", dir, err)
	}
	var c snapshot.Cluster
	files, _ := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return solver.Input{}, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return solver.Input{}, fmt.Errorf("%s: %w", f, err)
			}
			if doc == nil {
				continue
			}
			js, _ := yaml.Marshal(doc)
			switch doc["kind"] {
			case "NodePool":
				np := &v1.NodePool{}
				if err := yaml.UnmarshalStrict(js, np); err != nil {
					return solver.Input{}, fmt.Errorf("%s: %w", f, err)
				}
				c.NodePools = append(c.NodePools, np)
			case "DaemonSet":
				ds := &appsv1.DaemonSet{}
				if err := yaml.UnmarshalStrict(js, ds); err != nil {
					return solver.Input{}, fmt.Errorf("%s: %w", f, err)
				}
				ds.Namespace = orDefault(ds.Namespace)
				c.DaemonSets = append(c.DaemonSets, ds)
			case "Pod":
				p := &corev1.Pod{}
				if err := yaml.UnmarshalStrict(js, p); err != nil {
					return solver.Input{}, fmt.Errorf("%s: %w", f, err)
				}
				p.Namespace = orDefault(p.Namespace)
				if p.UID == "" {
					p.UID = snapshot.StableUID("pod", p.Namespace, p.Name)
				}
				c.Pods = append(c.Pods, p)
			default:
				return solver.Input{}, fmt.Errorf("%s: kind %v is not read by this loader", f, doc["kind"])
			}
		}
	}
	snap, err := snapshot.Build(c, snapshot.Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }})
	if err != nil {
		return solver.Input{}, fmt.Errorf("snapshot of %s: %w", dir, err)
	}
	return snap.Input, nil
}

func orDefault(ns string) string {
	if ns == "" {
		return corev1.NamespaceDefault
	}
	return ns
}
