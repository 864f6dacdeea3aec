package catalog_test

import (
	"bytes"
	"testing"

	"github.com/joist-dev/joist/catalog"
)

// FuzzParse feeds the catalog parser arbitrary files: no panic, and whatever it accepts survives a
// Marshal and Parse round trip with the same types.
func FuzzParse(f *testing.F) {
	def := catalog.DefaultYAML()
	f.Add(def[:bytes.Index(def, []byte("\n- name: c-2x"))+1]) // the first type of the default catalog
	f.Add([]byte("- name: a\n  capacity: {cpu: '2', memory: 4Gi}\n  offerings: [{zone: z, capacityType: spot, price: 0.1}]\n"))
	f.Add([]byte("- name: huge\n  capacity: {cpu: 1e21, memory: 10Pi, pods: '-1'}\n  offerings: [{zone: z, capacityType: on-demand, price: -1}]\n"))
	f.Add([]byte("[{\"name\": \"j\", \"capacity\": {\"cpu\": \"1\"}}]"))
	f.Add([]byte("- name: x\n  labels: {'bad key': v}\n  overhead: {cpu: lots}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		its, err := catalog.Parse(data)
		if err != nil {
			return
		}
		out, err := catalog.Marshal(its)
		if err != nil {
			t.Fatalf("marshalling a parsed catalog: %v", err)
		}
		again, err := catalog.Parse(out)
		if err != nil {
			t.Fatalf("re-parsing a marshalled catalog: %v\n%s", err, out)
		}
		if len(again) != len(its) {
			t.Fatalf("round trip kept %d of %d types", len(again), len(its))
		}
	})
}
