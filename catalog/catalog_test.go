package catalog

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joist-dev/joist/api/v1"
)

const example = `
instanceTypes:
- name: c-4x-amd64-linux
  capacity: {cpu: "4", memory: 8Gi, pods: "110", nvidia.com/gpu: "0"}
  overhead: {cpu: 80m, memory: 600Mi}        # optional: kube/system reserved + eviction
  labels: {kubernetes.io/arch: amd64, kubernetes.io/os: linux}
  offerings:
  - {zone: test-zone-a, capacityType: spot, price: 0.0612, available: true}
  - {zone: test-zone-a, capacityType: on-demand, price: 0.17, available: true}
`

func TestParseExample(t *testing.T) {
	its, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != 1 {
		t.Fatalf("got %d instance types, want 1", len(its))
	}
	it := its[0]
	if it.Name != "c-4x-amd64-linux" {
		t.Errorf("name = %q", it.Name)
	}
	alloc := it.Allocatable()
	for name, want := range map[corev1.ResourceName]string{"cpu": "3920m", "memory": "7592Mi", "pods": "110", "nvidia.com/gpu": "0"} {
		got := alloc[name]
		if got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), want)
		}
	}
	want := []Offering{
		{Zone: "test-zone-a", CapacityType: "spot", Price: 0.0612, Available: true},
		{Zone: "test-zone-a", CapacityType: "on-demand", Price: 0.17, Available: true},
	}
	if len(it.Offerings) != 2 || it.Offerings[0] != want[0] || it.Offerings[1] != want[1] {
		t.Errorf("offerings = %+v, want %+v", it.Offerings, want)
	}
}

func TestParseJSONAndDefaults(t *testing.T) {
	its, err := Parse([]byte(`{"instanceTypes":[{"name":"tiny","capacity":{"cpu":0.5,"memory":"1Gi"},
		"offerings":[{"zone":"z1","capacityType":"on-demand","price":0.01},{"zone":"z1","capacityType":"spot","price":0.004,"available":false}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	it := its[0]
	if got := it.Capacity[corev1.ResourceCPU]; got.MilliValue() != 500 {
		t.Errorf("cpu = %s, want 500m (numbers are accepted as quantities)", got.String())
	}
	if got := it.Capacity[corev1.ResourcePods]; got.Value() != 110 {
		t.Errorf("pods defaulted to %s, want 110", got.String())
	}
	if it.Labels[v1.LabelArch] != "amd64" || it.Labels[v1.LabelOS] != "linux" {
		t.Errorf("labels = %v, want arch and os defaulted to amd64 and linux", it.Labels)
	}
	if !it.Offerings[0].Available || it.Offerings[1].Available {
		t.Errorf("available = %v, %v; want omitted → true, explicit false kept", it.Offerings[0].Available, it.Offerings[1].Available)
	}
}

func TestParseErrors(t *testing.T) {
	const ok = `  capacity: {cpu: "4", memory: 8Gi}
  offerings:
  - {zone: z, capacityType: spot, price: 0.1}
`
	tests := []struct {
		name  string
		input string
		want  []string // every substring must appear in the error
	}{
		{"not yaml", "instanceTypes: [", []string{"not valid YAML or JSON"}},
		{"empty", "instanceTypes: []", []string{"instanceTypes is empty"}},
		{"unknown top-level field", "instancetypes: []", []string{`unknown field "instancetypes"`, "instanceTypes"}},
		{"missing name", "instanceTypes:\n- name: \"\"\n" + ok, []string{"instanceTypes[0]: name is required"}},
		{"duplicate name", "instanceTypes:\n- name: a\n" + ok + "- name: a\n" + ok,
			[]string{`instanceTypes[1] "a": name duplicates instanceTypes[0]; give each instance type a unique name`}},
		{"bad name", "instanceTypes:\n- name: a b\n" + ok, []string{`name "a b" is not usable as the node.kubernetes.io/instance-type label value`}},
		{"unknown entry field", "instanceTypes:\n- name: a\n  capactiy: {}\n" + ok, []string{`instanceTypes[0] "a": unknown field "capactiy"`}},
		{"malformed quantity", "instanceTypes:\n- name: a\n  capacity: {cpu: 4x, memory: 8Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{`instanceTypes[0] "a": capacity.cpu "4x" is not a quantity; write e.g.`}},
		// Quantities whose parse or comparison cost grows with the exponent (seconds at 1e7): refused unparsed.
		{"huge exponent", "instanceTypes:\n- name: a\n  capacity: {cpu: 4, memory: \"1e99999999\"}\n  overhead: {memory: \"1e-9999999\"}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{`capacity.memory "1e99999999" has an exponent beyond e±30`, `overhead.memory "1e-9999999" has an exponent beyond e±30`}},
		{"exponent past int", "instanceTypes:\n- name: a\n  capacity: {cpu: \"1e99999999999999999999\", memory: 8Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{`capacity.cpu "1e99999999999999999999" has an exponent beyond e±30`}},
		{"long quantity", "instanceTypes:\n- name: a\n  capacity: {cpu: \"0.000000000000000000000000000000000000000000000000000000000000000000000000000000001\", memory: 8Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{`is longer than 64 characters`}},
		{"missing cpu", "instanceTypes:\n- name: a\n  capacity: {memory: 8Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{`instanceTypes[0] "a": capacity.cpu is required`}},
		{"zero memory", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 0}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{"capacity.memory must be greater than zero"}},
		{"negative quantity", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi, pods: -3}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{"capacity.pods -3 is negative"}},
		{"overhead exceeds capacity", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  overhead: {memory: 2Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{"overhead.memory 2Gi exceeds capacity.memory 1Gi"}},
		{"overhead without capacity", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  overhead: {nvidia.com/gpu: 1}\n  offerings: [{zone: z, capacityType: spot, price: 1}]",
			[]string{"overhead.nvidia.com/gpu has no matching capacity.nvidia.com/gpu"}},
		{"implied label", "instanceTypes:\n- name: a\n  labels: {topology.kubernetes.io/zone: z}\n" + ok,
			[]string{"labels.topology.kubernetes.io/zone must not be set: it is implied by each offering's zone; remove it"}},
		{"bad label value", "instanceTypes:\n- name: a\n  labels: {team: \"a b\"}\n" + ok, []string{`labels.team: value "a b" is not a valid label value`}},
		{"missing offerings", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}", []string{`instanceTypes[0] "a": offerings is empty`}},
		{"negative price", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot, price: -0.1}]",
			[]string{`instanceTypes[0] "a": offerings[0].price -0.1 is negative`}},
		{"missing price", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot}]",
			[]string{"offerings[0].price is required"}},
		{"unknown capacity type", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: Spot, price: 1}]",
			[]string{`offerings[0].capacityType "Spot" is not one of spot, on-demand, reserved`}},
		{"missing zone", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{capacityType: spot, price: 1}]",
			[]string{"offerings[0].zone is required"}},
		{"duplicate offering", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}, {zone: z, capacityType: spot, price: 2}]",
			[]string{"offerings[1] duplicates offerings[0] (zone z, capacityType spot)"}},
		{"unknown offering field", "instanceTypes:\n- name: a\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot, cost: 1}]",
			[]string{`instanceTypes[0] "a": unknown field "offerings[0].cost"`}},
		{"every problem reported", "instanceTypes:\n- name: a\n  capacity: {cpu: x, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot, price: 1}]\n- name: b\n  capacity: {cpu: 1, memory: 1Gi}\n  offerings: [{zone: z, capacityType: spot, price: -1}]",
			[]string{`instanceTypes[0] "a": capacity.cpu "x"`, `instanceTypes[1] "b": offerings[0].price -1 is negative`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			its, err := Parse([]byte(tt.input))
			if err == nil {
				t.Fatalf("Parse succeeded with %d instance types, want an error containing %q", len(its), tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err.Error(), w)
				}
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	its, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	its[0].Labels["odd"] = "true" // must be quoted to stay a string
	first, err := Marshal(its)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(first)
	if err != nil {
		t.Fatalf("Marshal output does not parse: %v\n%s", err, first)
	}
	second, err := Marshal(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("round trip changed the catalog:\n%s\nvs\n%s", first, second)
	}
	if again[0].Labels["odd"] != "true" {
		t.Errorf("label odd = %q after round trip", again[0].Labels["odd"])
	}
}

func TestMarshalRejectsInvalid(t *testing.T) {
	_, err := Marshal([]*InstanceType{{Name: "x", Capacity: corev1.ResourceList{"cpu": resource.MustParse("1")}}})
	if err == nil || !strings.Contains(err.Error(), "capacity.memory is required") {
		t.Errorf("Marshal error = %v, want it to name capacity.memory", err)
	}
}

func TestDefaultFileIsGenerated(t *testing.T) {
	want, err := Marshal(Synthetic())
	if err != nil {
		t.Fatal(err)
	}
	got := DefaultYAML()
	if i := bytes.Index(got, []byte("instanceTypes:")); i >= 0 {
		got = got[i:]
	}
	if !bytes.Equal(got, want) {
		t.Error("default.yaml is stale: run `go generate ./catalog` and commit it")
	}
}

func TestDefaultReturnsCopies(t *testing.T) {
	a := Default()
	a[0].Labels["mutated"] = "yes"
	a[0].Offerings[0].Price = -1
	b := Default()
	if _, ok := b[0].Labels["mutated"]; ok || b[0].Offerings[0].Price < 0 {
		t.Error("Default returned shared instance types; a caller's change leaked into the next call")
	}
}
