package podmetrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// podState is one karpenter_pods_state sample (value 1): its label pairs, sorted by name. A scrape
// holds one per pod until it is written out, so a sample is small: the pairs whose value other pods
// share (namespace, owner, node and the node's labels, phase, readiness) are one object per scrape
// and value (statePairs), and only the pod's name gets a pair of its own. (prometheus.MustNewConstMetric
// allocates each of the 13 pairs and a pointer to each name and value: ~3.6 KB a pod per scrape with
// the registry's own copy, 180 MB a scrape at 50,000 pods; a slab of 13 pairs per pod was 1.7 KB.)
type podState struct {
	labels [len(stateLabelsArray)]*dto.LabelPair
}

// stateLabelsArray fixes the number of karpenter_pods_state labels for podState's array.
var stateLabelsArray = [...]string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready", "managed"}

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

// stateGauge is every sample's value; read only.
var stateGauge = func() *dto.Gauge {
	one := 1.0
	return &dto.Gauge{Value: &one}
}()

// statePairs hands out the label pairs of one scrape's samples: one pair per sorted label position and
// value, shared by every sample with that value (the pairs are read only once written).
type statePairs struct {
	byValue [len(stateLabelsArray)]map[string]*dto.LabelPair
}

// sample is the karpenter_pods_state sample of the label values (in stateLabels' order; values is
// the caller's buffer, read only during the call); name is the pod's name, kept (the cache's).
func (s *statePairs) sample(name *string, values []string) *podState {
	m := &podState{}
	for i, j := range sortedState {
		if stateLabels[j] == "name" {
			m.labels[i] = &dto.LabelPair{Name: &sortedStateNames[i], Value: name} // the pod's own
			continue
		}
		if s.byValue[i] == nil {
			s.byValue[i] = map[string]*dto.LabelPair{}
		}
		p := s.byValue[i][values[j]]
		if p == nil {
			v := values[j]
			p = &dto.LabelPair{Name: &sortedStateNames[i], Value: &v}
			s.byValue[i][v] = p
		}
		m.labels[i] = p
	}
	return m
}

func (m *podState) Desc() *prometheus.Desc { return stateDesc }

// Write fills out with the sample: its pairs, and the value every sample shares.
func (m *podState) Write(out *dto.Metric) error {
	out.Label = m.labels[:]
	out.Gauge = stateGauge
	return nil
}
