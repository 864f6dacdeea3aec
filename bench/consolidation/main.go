// Command consolidation writes issue #21's round-robin consolidation cluster
// (solver/consolidatebench.RoundRobin: 1,000 on-demand nodes of 4/8/16 vCPU, 30–40 % used, 50
// ReplicaSets, one NodePool over a 400-type catalog) as the YAML `joist simulate --consolidate`
// reads, so the CLI can be timed on the cluster the solver benchmark plans:
//
//	go run ./bench/consolidation -o /tmp/rr
//	joist simulate --consolidate --catalog /tmp/rr/catalog.yaml -f /tmp/rr/cluster.yaml
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver/consolidatebench"
)

func main() {
	out := flag.String("o", "", "directory to write catalog.yaml and cluster.yaml to")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: consolidation -o DIR")
		os.Exit(2)
	}
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "consolidation:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCatalog(filepath.Join(dir, "catalog.yaml"), consolidatebench.Catalog400()); err != nil {
		return err
	}
	in := consolidatebench.RoundRobin()
	f, err := os.Create(filepath.Join(dir, "cluster.yaml"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	np := consolidatebench.RoundRobinPool()
	np.TypeMeta = metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	docs := []any{np}
	for _, n := range in.Nodes {
		node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
			Status:     corev1.NodeStatus{Allocatable: n.Allocatable, Capacity: n.Allocatable}}
		docs = append(docs, node)
		for _, p := range n.Pods {
			docs = append(docs, p)
		}
	}
	for _, d := range docs {
		y, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n%s", y)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// writeCatalog writes the catalog in the format catalog.Parse reads.
func writeCatalog(path string, its []*catalog.InstanceType) error {
	type offering struct {
		Zone         string  `json:"zone"`
		CapacityType string  `json:"capacityType"`
		Price        float64 `json:"price"`
	}
	type entry struct {
		Name      string              `json:"name"`
		Capacity  corev1.ResourceList `json:"capacity"`
		Labels    map[string]string   `json:"labels"`
		Offerings []offering          `json:"offerings"`
	}
	var f struct {
		InstanceTypes []entry `json:"instanceTypes"`
	}
	for _, it := range its {
		e := entry{Name: it.Name, Capacity: it.Capacity, Labels: it.Labels}
		for _, o := range it.Offerings {
			e.Offerings = append(e.Offerings, offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price})
		}
		f.InstanceTypes = append(f.InstanceTypes, e)
	}
	y, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	return os.WriteFile(path, y, 0o644)
}
