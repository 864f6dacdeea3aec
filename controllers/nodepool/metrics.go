package nodepool

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
)

// poolUsage exports karpenter_nodepools_usage and karpenter_nodepools_nodes.
type poolUsage struct {
	resources *prometheus.GaugeVec
	nodes     *prometheus.GaugeVec
}

func (u poolUsage) set(pool string, resources corev1.ResourceList, nodes int64) {
	for name, q := range resources {
		u.resources.WithLabelValues(pool, string(name)).Set(q.AsApproximateFloat64())
	}
	u.nodes.WithLabelValues(pool).Set(float64(nodes))
}

// nodeAllocatable exports karpenter_nodes_allocatable per node.
type nodeAllocatable struct{ gauge *prometheus.GaugeVec }

func (a nodeAllocatable) Observe(nc v1.NodeClaim) {
	if nc.Status.NodeName == "" {
		return
	}
	for name, q := range nc.Status.Allocatable {
		a.gauge.WithLabelValues(nc.Status.NodeName, nc.Labels[v1.NodePoolLabelKey], string(name),
			nc.Labels[v1.LabelInstanceType], nc.Labels[v1.CapacityTypeLabelKey], nc.Labels[v1.LabelTopologyZone]).
			Set(q.AsApproximateFloat64())
	}
}

var (
	usage = poolUsage{
		resources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_usage", Help: "Capacity of the nodepool's nodes, by resource type.",
		}, []string{"nodepool", "resource_type"}),
		nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "karpenter_nodepools_nodes", Help: "Number of nodeclaims of the nodepool.",
		}, []string{"nodepool"}),
	}
	allocatable = nodeAllocatable{gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodes_allocatable", Help: "Allocatable resources of Joist nodes.",
	}, []string{"node_name", "nodepool", "resource_type", "instance_type", "capacity_type", "zone"})}
)

func init() {
	crmetrics.Registry.MustRegister(usage.resources, usage.nodes, allocatable.gauge)
}
