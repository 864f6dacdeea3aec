package podmetrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// podState is one karpenter_pods_state sample (value 1): the pod's label values in stateLabels'
// order. A scrape holds one per pod until it is written out, so it is built in a few allocations:
// prometheus.MustNewConstMetric allocates each of the 13 label pairs and a pointer to each name and
// value (~3.6 KB a pod per scrape with the registry's own copy, 180 MB a scrape at 50,000 pods).
// Label names point to one shared copy; values into the sample's own slice.
type podState struct {
	values []string
}

// sortedState are the positions in stateLabels of the label names in sorted order, and those names:
// a metric's label pairs are sorted by name.
var sortedState, sortedStateNames = func() ([]int, []string) {
	order := make([]int, len(stateLabels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(stateLabels[a], stateLabels[b]) })
	names := make([]string, len(order))
	for i, j := range order {
		names[i] = stateLabels[j]
	}
	return order, names
}()

// stateValue is every sample's value; read only.
var stateValue = 1.0

func (m *podState) Desc() *prometheus.Desc { return stateDesc }

// Write fills out with the sample: one slab of label pairs, one slice of pointers into it.
func (m *podState) Write(out *dto.Metric) error {
	pairs := make([]dto.LabelPair, len(sortedState))
	out.Label = make([]*dto.LabelPair, len(sortedState))
	for i, j := range sortedState {
		pairs[i].Name, pairs[i].Value = &sortedStateNames[i], &m.values[j]
		out.Label[i] = &pairs[i]
	}
	out.Gauge = &dto.Gauge{Value: &stateValue}
	return nil
}
