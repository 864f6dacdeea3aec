// Package catalog reads and writes instance-type catalogs: the YAML (or JSON) file that lists the
// machine shapes a simulated cloud can launch, with their capacity, overhead, labels and priced
// offerings. The same file feeds `joist simulate` and the KWOK cloud provider.
//
// A generated default catalog is embedded in the binary; see Default and docs/catalog.md.
package catalog

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

//go:generate go run ./gen -o default.yaml

// defaultCatalog is the generated default catalog (see Synthetic and gen/).
//
//go:embed default.yaml
var defaultCatalog []byte

// DefaultYAML returns the embedded default catalog file as shipped.
func DefaultYAML() []byte {
	return append([]byte(nil), defaultCatalog...)
}

var parsedDefault = sync.OnceValue(func() []*InstanceType {
	its, err := Parse(defaultCatalog)
	if err != nil {
		panic(fmt.Sprintf("embedded default catalog is invalid (regenerate it with `go generate ./catalog`): %v", err))
	}
	return its
})

// Default returns the embedded default catalog. Each call returns fresh copies the caller may modify.
func Default() []*InstanceType {
	shared := parsedDefault()
	out := make([]*InstanceType, len(shared))
	for i, it := range shared {
		out[i] = deepCopy(it)
	}
	return out
}

func deepCopy(it *InstanceType) *InstanceType {
	out := &InstanceType{
		Name:      it.Name,
		Capacity:  it.Capacity.DeepCopy(),
		Overhead:  it.Overhead.DeepCopy(),
		Labels:    make(map[string]string, len(it.Labels)),
		Offerings: append([]Offering(nil), it.Offerings...),
	}
	for k, v := range it.Labels {
		out.Labels[k] = v
	}
	return out
}

// Marshal writes instance types in the catalog format, one compact entry per type, keys sorted, so
// the output is stable and diffs well. The output is checked with Parse before it is returned.
func Marshal(its []*InstanceType) ([]byte, error) {
	var b strings.Builder
	b.WriteString("instanceTypes:\n")
	for _, it := range its {
		fmt.Fprintf(&b, "- name: %s\n", scalar(it.Name))
		fmt.Fprintf(&b, "  capacity: %s\n", resourceMap(it.Capacity))
		if len(it.Overhead) > 0 {
			fmt.Fprintf(&b, "  overhead: %s\n", resourceMap(it.Overhead))
		}
		if len(it.Labels) > 0 {
			fmt.Fprintf(&b, "  labels: %s\n", flowMap(it.Labels))
		}
		b.WriteString("  offerings:\n")
		for _, o := range it.Offerings {
			fmt.Fprintf(&b, "  - {zone: %s, capacityType: %s, price: %s, available: %t}\n",
				scalar(o.Zone), scalar(o.CapacityType), strconv.FormatFloat(o.Price, 'f', -1, 64), o.Available)
		}
	}
	out := []byte(b.String())
	if _, err := Parse(out); err != nil {
		return nil, fmt.Errorf("marshalling catalog: %w", err)
	}
	return out, nil
}

func resourceMap(rl corev1.ResourceList) string {
	m := make(map[string]string, len(rl))
	for name, q := range rl {
		m[string(name)] = canonical(q)
	}
	return flowMap(m)
}

// canonical prints a quantity in its canonical form (8Gi, 80m, 4).
func canonical(q resource.Quantity) string {
	q = q.DeepCopy()
	return q.String()
}

func flowMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = scalar(k) + ": " + scalar(m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// scalar prints s plain when YAML reads it back as the same string, double-quoted otherwise.
func scalar(s string) string {
	if s == "" || !plainSafe(s) {
		return strconv.Quote(s)
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return strconv.Quote(s)
	}
	return s
}

func plainSafe(s string) bool {
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}
