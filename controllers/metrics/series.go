package metrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gauges builds the gauge samples of one descriptor for one scrape, sharing their label pairs: one
// pair per label name and value, whichever samples carry it (a node's name and labels are shared by
// its series of every resource, a pool or zone by all its nodes'). prometheus.MustNewConstMetric
// allocates each pair and a pointer to each name and value of every sample: ~5.7 KB a node per
// scrape of karpenter_nodes_allocatable and joist_node_cost_per_hour, 28.5 MB of the heap at the
// 5,000-node peak of make bench-scale. Not safe for concurrent use; the samples are read only.
type Gauges struct {
	desc *prometheus.Desc
	// order are the positions of the label names in sorted order (a sample's pairs are sorted by
	// name), names the names in that order.
	order   []int
	names   []string
	byValue []map[string]*dto.LabelPair
}

// NewGauges returns a builder of desc's samples; labelNames are desc's variable labels, in the order
// Gauge takes their values.
func NewGauges(desc *prometheus.Desc, labelNames []string) *Gauges {
	order := make([]int, len(labelNames))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(labelNames[a], labelNames[b]) })
	names := make([]string, len(order))
	for i, j := range order {
		names[i] = labelNames[j]
	}
	return &Gauges{desc: desc, order: order, names: names, byValue: make([]map[string]*dto.LabelPair, len(order))}
}

// Gauge is the sample of value with the label values (in NewGauges' order; values is the caller's
// buffer, read only during the call).
func (g *Gauges) Gauge(value float64, values ...string) prometheus.Metric {
	s := &gauge{desc: g.desc, labels: make([]*dto.LabelPair, len(g.order))}
	s.value.Value = &s.v
	s.v = value
	for i, j := range g.order {
		if g.byValue[i] == nil {
			g.byValue[i] = map[string]*dto.LabelPair{}
		}
		p := g.byValue[i][values[j]]
		if p == nil {
			v := values[j]
			p = &dto.LabelPair{Name: &g.names[i], Value: &v}
			g.byValue[i][v] = p
		}
		s.labels[i] = p
	}
	return s
}

// gauge is one sample: its label pairs sorted by name, and its value.
type gauge struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	v      float64
	value  dto.Gauge
}

func (s *gauge) Desc() *prometheus.Desc { return s.desc }

// Write fills out with the sample.
func (s *gauge) Write(out *dto.Metric) error {
	out.Label = s.labels
	out.Gauge = &s.value
	return nil
}
