package node

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// nodeStore hands out a client-go informer whose store holds the nodes (never started).
type nodeStore struct {
	ctrlcache.Informers // only GetInformer is called
	nodes               toolscache.SharedIndexInformer
}

func (s nodeStore) GetInformer(context.Context, client.Object, ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	return s.nodes, nil
}

// poolGetter answers the collector's NodePool read.
type poolGetter struct{ client.Reader }

func (poolGetter) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	obj.(*v1.NodePool).Name = key.Name
	return nil
}

// A scrape builds each node's series sharing the label pairs they have in common (its name and
// labels across its resources, a pool's or zone's across nodes): MustNewConstMetric's own pairs and
// name and value pointers were ~5.7 KB a node per scrape (28.5 MB of the heap at the 5,000-node
// peak of make bench-scale).
func TestScrapeAllocatesLittlePerNode(t *testing.T) {
	const n = 1000
	inf := nodeStore{nodes: toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.Node{}, 0, toolscache.Indexers{})}
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("general-%05d", i), Labels: map[string]string{
			v1.NodePoolLabelKey: "general", v1.LabelInstanceType: "c-2x", v1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
			v1.CapacityTypeLabelKey: "on-demand", v1.LabelArch: "amd64", v1.LabelOS: "linux",
		}}, Status: corev1.NodeStatus{Phase: corev1.NodeRunning, Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"),
			corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("17Gi"),
		}}}
		if err := inf.nodes.GetStore().Add(node); err != nil {
			t.Fatal(err)
		}
	}
	var offerings []catalog.Offering
	for z := range 3 {
		offerings = append(offerings, catalog.Offering{Zone: fmt.Sprintf("zone-%d", z), CapacityType: "on-demand", Price: 0.1})
	}
	its := []*catalog.InstanceType{{Name: "c-2x", Offerings: offerings}}
	reg := prometheus.NewRegistry() // as controller-runtime's
	reg.MustRegister(&Collector{kube: poolGetter{}, informers: inf, instanceTypes: func(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }})
	if _, err := reg.Gather(); err != nil { // warm up
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	families, err := reg.Gather()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, f := range families {
		series[f.GetName()] = len(f.GetMetric())
	}
	if series["karpenter_nodes_allocatable"] != 4*n || series["joist_node_cost_per_hour"] != n {
		t.Fatalf("series %v, want %d karpenter_nodes_allocatable and %d joist_node_cost_per_hour", series, 4*n, n)
	}
	perNode := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated per node per scrape", perNode)
	if perNode > 3000 {
		t.Errorf("a scrape allocated %.0f bytes per node; want at most 3,000", perNode)
	}
}
