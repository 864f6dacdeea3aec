package node

import (
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/metrics"
)

var (
	// Created is karpenter_nodes_created_total.
	Created = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodes_created_total",
		Help: "Joist-managed nodes created, by nodepool and zone (counted from the watch: nodes created while the manager leads).",
	}, []string{metrics.LabelNodePool, metrics.LabelZone})
	// Terminated is karpenter_nodes_terminated_total.
	Terminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_nodes_terminated_total",
		Help: "Joist-managed nodes deleted, by nodepool and zone (counted from the watch: deletions seen while the manager leads).",
	}, []string{metrics.LabelNodePool, metrics.LabelZone})
)

func init() { crmetrics.Registry.MustRegister(Created, Terminated) }

// wellKnown maps the node labels Karpenter's per-node series carry (its core well-known labels) to
// their metric label names: the part after the slash, snake_cased, as upstream names them.
var wellKnown = map[string]string{
	v1.NodePoolLabelKey:      "nodepool",
	v1.CapacityTypeLabelKey:  "capacity_type",
	v1.LabelTopologyZone:     "zone",
	v1.LabelTopologyRegion:   "region",
	v1.LabelInstanceType:     "instance_type",
	v1.LabelArch:             "arch",
	v1.LabelOS:               "os",
	corev1.LabelWindowsBuild: "windows_build",
}

// LabelNames are the label names of a per-node series: the well-known labels, node_name, phase and
// managed, then extra.
func LabelNames(extra ...string) []string {
	out := make([]string, 0, len(wellKnown)+3+len(extra))
	for _, l := range wellKnown {
		out = append(out, l)
	}
	sort.Strings(out)
	return append(append(out, "node_name", "phase", "managed"), extra...)
}

// wellKnownKeys are the node label keys of LabelNames' well-known labels, in its order.
var wellKnownKeys = func() []string {
	byName := map[string]string{}
	for key, l := range wellKnown {
		byName[l] = key
	}
	names := LabelNames()
	out := make([]string, 0, len(wellKnown))
	for _, l := range names[:len(wellKnown)] {
		out = append(out, byName[l])
	}
	return out
}()

// LabelValues appends the values of LabelNames() for node to out, in that order (the well-known labels,
// node_name, phase, and managed: whether it carries karpenter.sh/nodepool).
func LabelValues(out []string, node *corev1.Node) []string {
	for _, key := range wellKnownKeys {
		out = append(out, node.Labels[key])
	}
	_, managed := node.Labels[v1.NodePoolLabelKey]
	return append(out, node.Name, string(node.Status.Phase), strconv.FormatBool(managed))
}
