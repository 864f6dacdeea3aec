package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/quantity"
)

// Defaults applied to entries that leave a field out.
const (
	DefaultPods = "110"
	DefaultArch = "amd64"
	DefaultOS   = "linux"
)

// impliedLabels are set from the instance type's name and the chosen offering (or by the node
// lifecycle), so a catalog entry may not carry them.
var impliedLabels = map[string]string{
	v1.LabelInstanceType:    "it is implied by the entry's name",
	v1.LabelTopologyZone:    "it is implied by each offering's zone",
	v1.CapacityTypeLabelKey: "it is implied by each offering's capacityType",
	v1.NodePoolLabelKey:     "it is set by the NodePool that launches the node",
	v1.LabelHostname:        "it is set per node",
}

var capacityTypes = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand, v1.CapacityTypeReserved}

// file is the catalog document; entries are decoded one by one so errors can name them.
type file struct {
	InstanceTypes []json.RawMessage `json:"instanceTypes"`
}

type entry struct {
	Name      string                `json:"name"`
	Capacity  map[string]scalarText `json:"capacity"`
	Overhead  map[string]scalarText `json:"overhead,omitempty"`
	Labels    map[string]scalarText `json:"labels,omitempty"`
	Offerings []offering            `json:"offerings"`
}

type offering struct {
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	Price        *float64 `json:"price"`
	Available    *bool    `json:"available,omitempty"`
}

// scalarText accepts a JSON string, number or boolean as text, so `cpu: 4` and `cpu: "4"` both work.
type scalarText string

func (s *scalarText) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = scalarText(str)
		return nil
	}
	t := strings.TrimSpace(string(b))
	if t == "" || t[0] == '{' || t[0] == '[' || t == "null" {
		return fmt.Errorf("expected a string or number, got %s", t)
	}
	*s = scalarText(t)
	return nil
}

// Parse reads a catalog in YAML or JSON and returns its instance types in file order. Entries that
// leave out capacity.pods get 110, and labels kubernetes.io/arch and kubernetes.io/os default to
// amd64 and linux; offerings without `available` are available. Every problem found is reported,
// each naming the entry, the field and what to change.
func Parse(data []byte) ([]*InstanceType, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("catalog is not valid YAML or JSON: %w", err)
	}
	var f file
	if err := strictUnmarshal(js, &f); err != nil {
		return nil, fmt.Errorf("catalog: %w (the file holds one key, instanceTypes, a list of entries)", err)
	}
	if len(f.InstanceTypes) == 0 {
		return nil, errors.New("catalog: instanceTypes is empty; list at least one instance type")
	}
	var (
		errs  []error
		out   = make([]*InstanceType, 0, len(f.InstanceTypes))
		names = map[string]int{}
	)
	for i, raw := range f.InstanceTypes {
		it, entryErrs := parseEntry(raw)
		where := fmt.Sprintf("instanceTypes[%d]", i)
		if it != nil && it.Name != "" {
			where += fmt.Sprintf(" %q", it.Name)
			if first, dup := names[it.Name]; dup {
				entryErrs = append(entryErrs, fmt.Sprintf("name duplicates instanceTypes[%d]; give each instance type a unique name", first))
			} else {
				names[it.Name] = i
			}
		}
		for _, e := range entryErrs {
			errs = append(errs, fmt.Errorf("%s: %s", where, e))
		}
		if len(entryErrs) == 0 {
			out = append(out, it)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// strictUnmarshal decodes with case-sensitive keys and rejects unknown and duplicate fields.
func strictUnmarshal(js []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(js, into)
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...)
	}
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// parseEntry decodes and validates one entry. It returns the instance type (possibly partial, for
// naming the entry) and the problems found.
func parseEntry(raw json.RawMessage) (*InstanceType, []string) {
	var e entry
	if err := strictUnmarshal(raw, &e); err != nil {
		var named struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &named)
		return &InstanceType{Name: named.Name}, []string{err.Error() +
			" (entry fields are name, capacity, overhead, labels, offerings; offering fields are zone, capacityType, price, available)"}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	it := &InstanceType{Name: e.Name, Labels: map[string]string{}}

	switch {
	case e.Name == "":
		add("name is required")
	default:
		for _, msg := range validation.IsValidLabelValue(e.Name) {
			add("name %q is not usable as the %s label value: %s", e.Name, v1.LabelInstanceType, msg)
		}
	}

	it.Capacity = parseResources("capacity", e.Capacity, add)
	for _, required := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := it.Capacity[required]
		switch {
		case !ok && e.Capacity[string(required)] == "":
			add("capacity.%s is required; add it, e.g. capacity: {cpu: \"4\", memory: 8Gi}", required)
		case ok && q.Sign() <= 0:
			add("capacity.%s must be greater than zero", required)
		}
	}
	if _, ok := e.Capacity[string(corev1.ResourcePods)]; !ok {
		it.Capacity[corev1.ResourcePods] = resource.MustParse(DefaultPods)
	}

	if e.Overhead != nil {
		it.Overhead = parseResources("overhead", e.Overhead, add)
		for _, key := range sortedKeys(e.Overhead) {
			name := corev1.ResourceName(key)
			o, parsed := it.Overhead[name]
			if !parsed {
				continue
			}
			c, ok := it.Capacity[name]
			switch {
			case !ok:
				add("overhead.%s has no matching capacity.%s; add it to capacity or remove it from overhead", name, name)
			case o.Cmp(c) > 0:
				add("overhead.%s %s exceeds capacity.%s %s; overhead must leave allocatable >= 0", name, canonical(o), name, canonical(c))
			}
		}
	}

	for _, k := range sortedKeys(e.Labels) {
		v := string(e.Labels[k])
		for _, msg := range validation.IsQualifiedName(k) {
			add("labels: key %q is not a valid label key: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			add("labels.%s: value %q is not a valid label value: %s", k, v, msg)
		}
		if why, ok := impliedLabels[k]; ok {
			add("labels.%s must not be set: %s; remove it", k, why)
		}
		it.Labels[k] = v
	}
	if _, ok := it.Labels[v1.LabelArch]; !ok {
		it.Labels[v1.LabelArch] = DefaultArch
	}
	if _, ok := it.Labels[v1.LabelOS]; !ok {
		it.Labels[v1.LabelOS] = DefaultOS
	}

	if len(e.Offerings) == 0 {
		add("offerings is empty; list at least one {zone, capacityType, price}")
	}
	seen := map[[2]string]int{}
	for j, o := range e.Offerings {
		at := fmt.Sprintf("offerings[%d]", j)
		if o.Zone == "" {
			add("%s.zone is required", at)
		} else {
			for _, msg := range validation.IsValidLabelValue(o.Zone) {
				add("%s.zone %q is not a valid label value: %s", at, o.Zone, msg)
			}
		}
		if !contains(capacityTypes, o.CapacityType) {
			add("%s.capacityType %q is not one of %s; use one of those (lowercase)", at, o.CapacityType, strings.Join(capacityTypes, ", "))
		}
		switch {
		case o.Price == nil:
			add("%s.price is required; give the price per hour, e.g. price: 0.17", at)
		case math.IsNaN(*o.Price) || math.IsInf(*o.Price, 0):
			add("%s.price must be a finite number", at)
		case *o.Price < 0:
			add("%s.price %v is negative; prices are per hour and must be >= 0", at, *o.Price)
		}
		key := [2]string{o.Zone, o.CapacityType}
		if first, dup := seen[key]; dup {
			add("%s duplicates offerings[%d] (zone %s, capacityType %s); keep one offering per zone and capacity type", at, first, o.Zone, o.CapacityType)
		} else {
			seen[key] = j
		}
		off := Offering{Zone: o.Zone, CapacityType: o.CapacityType, Available: o.Available == nil || *o.Available}
		if o.Price != nil {
			off.Price = *o.Price
		}
		it.Offerings = append(it.Offerings, off)
	}
	return it, problems
}

func parseResources(field string, in map[string]scalarText, add func(string, ...any)) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, name := range sortedKeys(in) {
		text := in[name]
		for _, msg := range validation.IsQualifiedName(name) {
			add("%s: %q is not a valid resource name: %s", field, name, msg)
		}
		if why := quantity.CheckText(string(text)); why != "" {
			add("%s.%s %q %s", field, name, string(text), why)
			continue
		}
		q, err := resource.ParseQuantity(string(text))
		if err != nil {
			add("%s.%s %q is not a quantity; write e.g. \"4\", 500m, 8Gi", field, name, string(text))
			continue
		}
		if q.Sign() < 0 {
			add("%s.%s %s is negative; quantities must be >= 0", field, name, canonical(q))
			continue
		}
		out[corev1.ResourceName(name)] = q
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
