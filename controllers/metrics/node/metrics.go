package node

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// Allocatable is karpenter_nodes_allocatable.
	Allocatable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_nodes_allocatable",
		Help: "Allocatable resources of Joist-managed nodes, by node, nodepool, resource type, instance type, capacity type and zone.",
	}, []string{"node_name", "nodepool", "resource_type", "instance_type", "capacity_type", "zone"})
	// CostPerHour is joist_node_cost_per_hour.
	CostPerHour = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "joist_node_cost_per_hour",
		Help: "Hourly price of the node's offering (instance type, zone, capacity type) in the cloud provider's catalog, in the catalog's currency (USD for the built-in catalogs).",
	}, []string{"node", "nodepool", "instance_type", "capacity_type", "zone", "arch"})
	// Created is karpenter_nodes_created_total.
	Created = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodes_created_total",
		Help: "Joist-managed nodes created, by nodepool (counted from the watch: nodes created while the manager leads).",
	}, []string{"nodepool"})
	// Terminated is karpenter_nodes_terminated_total.
	Terminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodes_terminated_total",
		Help: "Joist-managed nodes deleted, by nodepool (counted from the watch: deletions seen while the manager leads).",
	}, []string{"nodepool"})
)

func init() { crmetrics.Registry.MustRegister(Allocatable, CostPerHour, Created, Terminated) }
