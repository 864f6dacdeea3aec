package metrics_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"

	// Every package that registers series in the manager's registry.
	_ "github.com/joist-dev/joist/cloudprovider/aws"
	_ "github.com/joist-dev/joist/cloudprovider/aws/interruption"
	_ "github.com/joist-dev/joist/cloudprovider/kwok"
	_ "github.com/joist-dev/joist/cloudprovider/metrics"
	_ "github.com/joist-dev/joist/controllers/disruption"
	nodemetrics "github.com/joist-dev/joist/controllers/metrics/node"
	_ "github.com/joist-dev/joist/controllers/metrics/nodeclaim"
	nodepoolmetrics "github.com/joist-dev/joist/controllers/metrics/nodepool"
	_ "github.com/joist-dev/joist/controllers/metrics/pod"
	"github.com/joist-dev/joist/controllers/podmetrics"
	_ "github.com/joist-dev/joist/controllers/provisioning"
)

// series is one metric family: from Karpenter's registrations (testdata, generated in bench/upstream
// from upstream's own packages) or from Joist's registry.
type series struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Labels  []string  `json:"labels"`
	Buckets []float64 `json:"buckets,omitempty"`
}

// row is one line of docs/metrics.md's table.
type row struct {
	karpenter, joist, typ string
	labels, lacks         []string
	line                  string
}

// TestMetricTableMatchesRegistries holds docs/metrics.md's table to both registries: each Joist series
// it names is registered with those labels and type; each Karpenter series it names is upstream's, with
// the same type and buckets and exactly the listed labels missing; every upstream series has a row
// (mapped, or missing with why); every karpenter_/joist_ series Joist registers has a row; and Joist's
// own series start with joist_.
func TestMetricTableMatchesRegistries(t *testing.T) {
	upstream := map[string]series{}
	raw, err := os.ReadFile("testdata/karpenter-v1.15-series.json")
	if err != nil {
		t.Fatal(err)
	}
	var list []series
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		upstream[s.Name] = s
	}
	joist := registered(t)
	rows := readTable(t, "../../docs/metrics.md")

	documented := map[string]bool{}
	for _, r := range rows {
		documented[r.karpenter], documented[r.joist] = true, true
		if r.joist != "" {
			got, ok := joist[r.joist]
			switch {
			case !ok:
				t.Errorf("%s: %s is not registered", r.line, r.joist)
				continue
			case !slices.Equal(got.Labels, r.labels):
				t.Errorf("%s: %s is registered with labels %v, the table says %v", r.line, r.joist, got.Labels, r.labels)
			case got.Type != r.typ:
				t.Errorf("%s: %s is a %s, the table says %s", r.line, r.joist, got.Type, r.typ)
			}
			if r.karpenter == "" && !strings.HasPrefix(r.joist, "joist_") {
				t.Errorf("%s: a series Karpenter does not have must be named joist_…", r.line)
			}
		}
		if r.karpenter == "" {
			continue
		}
		up, ok := upstream[r.karpenter]
		if !ok {
			t.Errorf("%s: Karpenter v1.15 registers no %s", r.line, r.karpenter)
			continue
		}
		if r.joist == "" {
			continue
		}
		got := joist[r.joist]
		if r.joist != r.karpenter {
			t.Errorf("%s: %s means what Karpenter's %s does and must carry its name", r.line, r.joist, r.karpenter)
		}
		if got.Type != up.Type {
			t.Errorf("%s: %s is a %s, Karpenter's is a %s", r.line, r.joist, got.Type, up.Type)
		}
		if !slices.Equal(got.Buckets, up.Buckets) {
			t.Errorf("%s: %s has buckets %v, Karpenter's %v", r.line, r.joist, got.Buckets, up.Buckets)
		}
		var lacks []string
		for _, l := range up.Labels {
			if !slices.Contains(got.Labels, l) {
				lacks = append(lacks, l)
			}
		}
		if !slices.Equal(lacks, r.lacks) {
			t.Errorf("%s: %s lacks Karpenter's labels %v, the table says %v", r.line, r.joist, lacks, r.lacks)
		}
	}
	for name := range upstream {
		if !documented[name] {
			t.Errorf("Karpenter's %s has no row in docs/metrics.md (mapped, or missing with why)", name)
		}
	}
	for name := range joist {
		if (strings.HasPrefix(name, "karpenter_") || strings.HasPrefix(name, "joist_")) && !documented[name] {
			t.Errorf("Joist registers %s, which docs/metrics.md's table does not list", name)
		}
	}
}

// readTable parses the rows of the table under "## Karpenter's series and Joist's".
func readTable(t *testing.T, path string) []row {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "## Karpenter's series and Joist's")
	if !ok {
		t.Fatalf("%s has no section \"## Karpenter's series and Joist's\"", path)
	}
	var rows []row
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") && !strings.HasPrefix(line, "| —") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 6 {
			t.Fatalf("row with %d cells, want 6: %s", len(cells), line)
		}
		rows = append(rows, row{
			karpenter: code(cells[0]), joist: code(cells[1]), typ: strings.TrimSpace(cells[2]),
			labels: codes(cells[3]), lacks: codes(cells[4]), line: strings.TrimSpace(code(cells[0]) + " " + code(cells[1])),
		})
	}
	if len(rows) < 40 {
		t.Fatalf("only %d rows in the table", len(rows))
	}
	return rows
}

func code(cell string) string {
	c := codes(cell)
	if len(c) == 0 {
		return ""
	}
	return c[0]
}

// codes are the `…` spans of a cell, sorted.
func codes(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	sort.Strings(out)
	return out
}

// registered reads every family in controller-runtime's registry, with the scrape-time collector of
// podmetrics registered over a cache holding one node and one pod so that it yields each family.
func registered(t *testing.T) map[string]series {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"karpenter.sh/nodepool": "p"}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "d", OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}},
	}
	if err := podmetrics.Register(fake.NewClientBuilder().WithObjects(node, pod).Build(), nil); err != nil {
		t.Fatal(err)
	}
	if err := registerNodeCollector(node); err != nil {
		t.Fatal(err)
	}
	// karpenter_nodepools_cost_total is a collector summing the pools' costs at scrape time: one
	// series to read its type from.
	nodepoolmetrics.CostPerHour.WithLabelValues("p").Set(0)
	defer nodepoolmetrics.CostPerHour.DeleteLabelValues("p")
	reg, ok := crmetrics.Registry.(*prometheus.Registry)
	if !ok {
		t.Fatalf("controller-runtime's registry is a %T", crmetrics.Registry)
	}
	out := map[string]series{}
	for _, c := range collectors(reg) {
		for _, s := range describe(t, c) {
			out[s.Name] = s
		}
	}
	return out
}

// collectors reads the registry's collectors: a registry only answers Gather, where a vector with no
// series yet is absent.
func collectors(reg *prometheus.Registry) []prometheus.Collector {
	f := reflect.ValueOf(reg).Elem().FieldByName("collectorsByID")
	f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	var out []prometheus.Collector
	for it := f.MapRange(); it.Next(); {
		out = append(out, it.Value().Interface().(prometheus.Collector))
	}
	return out
}

// describe reads a collector's families: names and labels from its descriptors, type and buckets from
// a series (a vector gets one with placeholder labels, removed afterwards).
func describe(t *testing.T, c prometheus.Collector) []series {
	descs := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(descs); close(descs) }()
	var out []series
	for d := range descs {
		name, labels := parseDesc(d.String())
		s := series{Name: name, Labels: labels}
		placeholders := make([]string, len(labels))
		var m prometheus.Metric
		switch v := c.(type) {
		case *prometheus.CounterVec:
			m = v.WithLabelValues(placeholders...)
			defer v.DeleteLabelValues(placeholders...)
		case *prometheus.GaugeVec:
			m = v.WithLabelValues(placeholders...)
			defer v.DeleteLabelValues(placeholders...)
		case *prometheus.HistogramVec:
			m = v.WithLabelValues(placeholders...).(prometheus.Metric)
			defer v.DeleteLabelValues(placeholders...)
		case *prometheus.SummaryVec:
			m = v.WithLabelValues(placeholders...).(prometheus.Metric)
			defer v.DeleteLabelValues(placeholders...)
		default:
			m = collectOne(c, d)
		}
		if m == nil {
			t.Errorf("%s: no series to read its type from", name)
			continue
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		switch {
		case pb.Counter != nil:
			s.Type = "counter"
		case pb.Gauge != nil:
			s.Type = "gauge"
		case pb.Summary != nil:
			s.Type = "summary"
		case pb.Histogram != nil:
			s.Type = "histogram"
			for _, b := range pb.Histogram.GetBucket() {
				s.Buckets = append(s.Buckets, b.GetUpperBound())
			}
		}
		out = append(out, s)
	}
	return out
}

func collectOne(c prometheus.Collector, d *prometheus.Desc) prometheus.Metric {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var found prometheus.Metric
	for m := range ch {
		if found == nil && m.Desc() == d {
			found = m
		}
	}
	return found
}

// parseDesc reads fqName and variableLabels out of Desc.String(), the only place they are exposed.
func parseDesc(s string) (string, []string) {
	_, rest, _ := strings.Cut(s, `fqName: "`)
	name, _, _ := strings.Cut(rest, `"`)
	_, rest, _ = strings.Cut(s, "variableLabels: {")
	raw, _, _ := strings.Cut(rest, "}")
	var labels []string
	for _, l := range strings.Split(raw, ",") {
		if l = strings.TrimSpace(l); l != "" {
			labels = append(labels, l)
		}
	}
	sort.Strings(labels)
	return name, labels
}

// registerNodeCollector registers the per-node series' collector over node, made allocatable and
// priced so that every family it exports has a series.
func registerNodeCollector(node *corev1.Node) error {
	node = node.DeepCopy()
	node.Labels[v1.LabelInstanceType], node.Labels[v1.LabelTopologyZone], node.Labels[v1.CapacityTypeLabelKey] = "c-2x", "zone-a", "spot"
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return err
	}
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: node.Labels[v1.NodePoolLabelKey]}}
	its := []*catalog.InstanceType{{Name: "c-2x", Offerings: []catalog.Offering{{Zone: "zone-a", CapacityType: "spot", Price: 0.1}}}}
	return nodemetrics.RegisterCollector(fake.NewClientBuilder().WithScheme(scheme).WithObjects(node, pool).Build(), nil,
		func(context.Context, *v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil })
}
