package simulate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joist-dev/joist/catalog/azure"
)

// TestEmbeddedAzurePlansTheSeedNodePool plans the seed article's AKS NodePool (general, spot and
// on-demand, amd64, D/E/F families, limits cpu 200 / memory 400Gi) against the embedded Azure
// catalog: every node is a D, E or F size, spot while spot is cheaper, and the plan stays within
// the limits, leaving what does not fit unschedulable.
func TestEmbeddedAzurePlansTheSeedNodePool(t *testing.T) {
	seed, err := os.ReadFile("testdata/azure/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replicas          string
		wantUnschedulable bool
	}{{"40", false}, {"250", true}} {
		t.Run(tc.replicas+" replicas", func(t *testing.T) {
			dir := t.TempDir()
			in := strings.Replace(string(seed), "replicas: 40", "replicas: "+tc.replicas, 1)
			if err := os.WriteFile(filepath.Join(dir, "seed.yaml"), []byte(in), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := Main([]string{"-f", dir, "--catalog", azure.CatalogName, "-o", "json"}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var r Report
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("%v: %s", err, stdout.String())
			}
			if r.Catalog != azure.CatalogName || r.InstanceTypes < 10 || r.Nodes == 0 {
				t.Fatalf("catalog %s (%d types), %d nodes", r.Catalog, r.InstanceTypes, r.Nodes)
			}
			cpu, mem := resource.Quantity{}, resource.Quantity{}
			for _, nc := range r.NodeClaims {
				size, ok := azure.ParseSize(nc.InstanceType)
				if !ok || !strings.Contains("DEF", size.Family) || nc.CapacityType != "spot" || !strings.HasPrefix(nc.Zone, "eastus-") {
					t.Errorf("node %s %s %s: want a spot D, E or F size in eastus", nc.InstanceType, nc.CapacityType, nc.Zone)
				}
				// Limits count node capacity, which is memory less the VM overhead, as in Karpenter.
				it := azure.Build(azure.Lookup(nc.InstanceType), azure.DefaultSettings())
				cpu.Add(it.Capacity["cpu"])
				mem.Add(it.Capacity["memory"])
			}
			if cpu.Cmp(resource.MustParse("200")) > 0 || mem.Cmp(resource.MustParse("400Gi")) > 0 {
				t.Errorf("plan launches %s CPUs and %s memory, over the pool's limits 200 / 400Gi", cpu.String(), mem.String())
			}
			if got := len(r.Unschedulable) > 0; got != tc.wantUnschedulable {
				t.Errorf("unschedulable %d (scheduled %d of %d), want some: %v", len(r.Unschedulable), r.Scheduled, r.Pods, tc.wantUnschedulable)
			}
		})
	}
}
