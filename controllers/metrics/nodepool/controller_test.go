package nodepool

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// claimLists counts the NodeClaim lists made through it.
type claimLists struct {
	client.Client
	n int
}

func (c *claimLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v1.NodeClaimList); ok {
		c.n++
	}
	return c.Client.List(ctx, list, opts...)
}

// karpenter_nodepools_cost_total is summed when Prometheus scrapes, once for all pools: a pool's
// reconcile (which every claim event used to cause) reads no claim, and a scrape shows each pool's
// live claims' prices, 0 for a pool without any, and no series for a pool that is gone.
func TestCostSummedAtScrapeTime(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	its := []*catalog.InstanceType{{Name: "c-2x", Offerings: []catalog.Offering{
		{Zone: "zone-a", CapacityType: "spot", Price: 0.25}, {Zone: "zone-b", CapacityType: "spot", Price: 0.5}}}}
	claim := func(name, pool, zone string, deleting bool) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool,
			v1.LabelInstanceType: "c-2x", v1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: "spot"}}}
		if deleting {
			nc.Finalizers = []string{"test"}
			nc.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
		}
		return nc
	}
	base := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "idle"}},
		claim("a", "general", "zone-a", false), claim("b", "general", "zone-b", false), claim("c", "general", "zone-b", true)).Build()
	kube := &claimLists{Client: base}
	c := New(kube, func(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil })
	costs.mu.Lock()
	prev := costs.c
	costs.c = c
	costs.mu.Unlock()
	t.Cleanup(func() {
		costs.mu.Lock()
		costs.c = prev
		costs.mu.Unlock()
		CostPerHour.Reset()
	})

	for _, pool := range []string{"general", "idle"} {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}}); err != nil {
			t.Fatal(err)
		}
	}
	if kube.n != 0 {
		t.Errorf("reconciling the pools listed the claims %d times, want none (the cost is summed at scrape time)", kube.n)
	}
	const help = `
# HELP karpenter_nodepools_cost_total Total cost of the nodepool: the sum of the hourly offering prices of its live NodeClaims, in the catalog's currency (USD for the built-in catalogs). Not a billing source.
# TYPE karpenter_nodepools_cost_total gauge
`
	if err := testutil.CollectAndCompare(costs, strings.NewReader(help+`karpenter_nodepools_cost_total{nodepool="general"} 0.75
karpenter_nodepools_cost_total{nodepool="idle"} 0
`)); err != nil {
		t.Error(err)
	}
	if kube.n != 1 {
		t.Errorf("one scrape listed the claims %d times, want once for all pools", kube.n)
	}

	if err := base.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "idle"}}); err != nil {
		t.Fatal(err)
	}
	if err := base.Delete(ctx, claim("a", "general", "zone-a", false)); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(costs, strings.NewReader(help+`karpenter_nodepools_cost_total{nodepool="general"} 0.5
`)); err != nil {
		t.Error(err)
	}
}
