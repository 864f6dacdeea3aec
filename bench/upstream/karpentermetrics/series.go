// Package karpentermetrics lists the Prometheus series Karpenter v1.15 (core and the AWS provider)
// registers — name, type, label names and histogram buckets — read from the series upstream's own
// packages register in controller-runtime's registry when they are linked in. The list is committed in
// the main module (controllers/metrics/testdata) where Joist's registry is checked against it.
package karpentermetrics

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	// Every upstream package that declares series in its package variables.
	_ "github.com/aws/karpenter-provider-aws/pkg/batcher"
	_ "github.com/aws/karpenter-provider-aws/pkg/controllers/interruption"
	_ "github.com/aws/karpenter-provider-aws/pkg/controllers/metrics"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/instance"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/instancetype"
	_ "github.com/aws/karpenter-provider-aws/pkg/providers/launchtemplate"
	_ "sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	_ "sigs.k8s.io/karpenter/pkg/controllers/disruption"
	nodemetrics "sigs.k8s.io/karpenter/pkg/controllers/metrics/node"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/nodepool"
	_ "sigs.k8s.io/karpenter/pkg/controllers/metrics/pod"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination"
	_ "sigs.k8s.io/karpenter/pkg/controllers/node/termination/terminator"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/lifecycle"
	_ "sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/reboot"
	_ "sigs.k8s.io/karpenter/pkg/controllers/pod/deletioncost"
	_ "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	_ "sigs.k8s.io/karpenter/pkg/controllers/state"
	_ "sigs.k8s.io/karpenter/pkg/metrics"
	_ "sigs.k8s.io/karpenter/pkg/operator"
	_ "sigs.k8s.io/karpenter/pkg/state/cost"
)

// Series is one registered metric family.
type Series struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Labels  []string  `json:"labels"`
	Buckets []float64 `json:"buckets,omitempty"`
}

// initNodeSeries registers the per-node series, which upstream creates in its controller's constructor
// (their labels include the cloud provider's well-known labels, here the AWS provider's).
var initNodeSeries = sync.OnceFunc(func() { nodemetrics.NewController(nil) })

// Upstream returns the karpenter_* series upstream registers, sorted by name.
func Upstream() ([]Series, error) {
	initNodeSeries()
	reg, ok := crmetrics.Registry.(*prometheus.Registry)
	if !ok {
		return nil, fmt.Errorf("controller-runtime's registry is a %T, not a *prometheus.Registry", crmetrics.Registry)
	}
	var out []Series
	for _, c := range collectors(reg) {
		descs := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(descs); close(descs) }()
		for d := range descs {
			name, labels := parseDesc(d.String())
			if !strings.HasPrefix(name, "karpenter_") {
				continue
			}
			s, err := describe(c, name, labels)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// collectors reads the registry's collectors (unexported: a registry only answers Gather, and a vector
// with no children gathers nothing).
func collectors(reg *prometheus.Registry) []prometheus.Collector {
	v := reflect.ValueOf(reg).Elem()
	byID := v.FieldByName("collectorsByID")
	byID = reflect.NewAt(byID.Type(), unsafe.Pointer(byID.UnsafeAddr())).Elem()
	var out []prometheus.Collector
	it := byID.MapRange()
	for it.Next() {
		out = append(out, it.Value().Interface().(prometheus.Collector))
	}
	return out
}

// describe finds the type and buckets by creating one child of the vector and collecting it.
func describe(c prometheus.Collector, name string, labels []string) (Series, error) {
	s := Series{Name: name, Labels: append([]string{}, labels...)}
	sort.Strings(s.Labels)
	values := make([]string, len(labels))
	for i := range values {
		values[i] = "x"
	}
	switch v := c.(type) {
	case *prometheus.CounterVec:
		s.Type = "counter"
	case *prometheus.GaugeVec:
		s.Type = "gauge"
	case *prometheus.SummaryVec:
		s.Type = "summary"
	case *prometheus.HistogramVec:
		s.Type = "histogram"
		h, err := v.GetMetricWithLabelValues(values...)
		if err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		var m dto.Metric
		if err := h.(prometheus.Metric).Write(&m); err != nil {
			return s, fmt.Errorf("%s: %w", name, err)
		}
		for _, b := range m.GetHistogram().GetBucket() {
			s.Buckets = append(s.Buckets, b.GetUpperBound())
		}
		v.DeleteLabelValues(values...)
	default:
		return s, fmt.Errorf("%s: collector %T not understood", name, c)
	}
	return s, nil
}

// parseDesc reads fqName and variableLabels out of Desc.String(), the only place they are exposed.
func parseDesc(s string) (string, []string) {
	name := between(s, `fqName: "`, `"`)
	raw := between(s, "variableLabels: {", "}")
	var labels []string
	for _, l := range strings.Split(raw, ",") {
		if l = strings.TrimSpace(l); l != "" {
			labels = append(labels, l)
		}
	}
	return name, labels
}

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}
