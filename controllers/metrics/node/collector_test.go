package node

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// TestCollectorReadsTheNodesAtScrapeTime checks karpenter_nodes_allocatable and
// joist_node_cost_per_hour come from the nodes as they are when scraped: every managed node's
// allocatable resources and offering price, nothing for an unmanaged node or an offering the catalog
// lacks, and a node's change or deletion shown by the next scrape without any reconcile.
func TestCollectorReadsTheNodesAtScrapeTime(t *testing.T) {
	ctx := context.Background()
	its := []*catalog.InstanceType{{Name: "c-2x", Offerings: []catalog.Offering{{Zone: "zone-a", CapacityType: "spot", Price: 0.25}}}}
	node := func(name, zone, cpu string, pool bool) *corev1.Node {
		labels := map[string]string{v1.LabelInstanceType: "c-2x", v1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: "spot", v1.LabelArch: "amd64"}
		if pool {
			labels[v1.NodePoolLabelKey] = "general"
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), "hugepages-2Mi": resource.MustParse("0")}}}
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	a, b := node("a", "zone-a", "2", true), node("b", "zone-b", "1500m", true)
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, node("unmanaged", "zone-a", "8", false),
		&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}).Build()
	c := &Collector{kube: kube, instanceTypes: func(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil }}

	const help = `
# HELP joist_node_cost_per_hour Hourly price of the node's offering (instance type, zone, capacity type) in the cloud provider's catalog, in the catalog's currency (USD for the built-in catalogs).
# TYPE joist_node_cost_per_hour gauge
joist_node_cost_per_hour{arch="amd64",capacity_type="spot",instance_type="c-2x",node="a",nodepool="general",zone="zone-a"} 0.25
# HELP karpenter_nodes_allocatable Allocatable resources of Joist-managed nodes, by node, resource type and the node's well-known labels.
# TYPE karpenter_nodes_allocatable gauge
`
	want := help + `karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="c-2x",managed="true",node_name="a",nodepool="general",os="",phase="",region="",resource_type="cpu",windows_build="",zone="zone-a"} 2
karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="c-2x",managed="true",node_name="a",nodepool="general",os="",phase="",region="",resource_type="hugepages_2mi",windows_build="",zone="zone-a"} 0
karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="c-2x",managed="true",node_name="b",nodepool="general",os="",phase="",region="",resource_type="cpu",windows_build="",zone="zone-b"} 1.5
karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="c-2x",managed="true",node_name="b",nodepool="general",os="",phase="",region="",resource_type="hugepages_2mi",windows_build="",zone="zone-b"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	a.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("4")
	if err := kube.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	want = help + `karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="c-2x",managed="true",node_name="a",nodepool="general",os="",phase="",region="",resource_type="cpu",windows_build="",zone="zone-a"} 4
karpenter_nodes_allocatable{arch="amd64",capacity_type="spot",instance_type="c-2x",managed="true",node_name="a",nodepool="general",os="",phase="",region="",resource_type="hugepages_2mi",windows_build="",zone="zone-a"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Errorf("after a's allocatable changed and b was deleted: %v", err)
	}
}
