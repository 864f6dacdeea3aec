package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// Requirement is the set of values one label key may take on a node: a finite set (In), the
// complement of one (NotIn, Exists), optionally narrowed by integer bounds (Gt, Lt, Gte, Lte), and
// whether a node without the label satisfies it (NotIn, DoesNotExist).
type Requirement struct {
	Key          string
	complement   bool
	values       map[string]bool
	gt, lt       *int64 // exclusive bounds
	allowsAbsent bool
}

// NewRequirement builds the requirement of one node selector term entry.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
	r := Requirement{Key: key, values: map[string]bool{}}
	switch op {
	case corev1.NodeSelectorOpIn:
		for _, v := range values {
			r.values[v] = true
		}
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.allowsAbsent = true, true
		for _, v := range values {
			r.values[v] = true
		}
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.allowsAbsent = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		r.complement = true
		n, err := firstInt(values)
		if err != nil {
			// An unparsable bound admits nothing, like the apiserver's CEL rule would reject it.
			r.complement = false
			return r
		}
		switch op {
		case corev1.NodeSelectorOpGt:
			r.gt = &n
		case v1.NodeSelectorOpGte:
			r.gt = ptrInt(satSub(n, 1))
		case corev1.NodeSelectorOpLt:
			r.lt = &n
		case v1.NodeSelectorOpLte:
			r.lt = ptrInt(satAdd(n, 1))
		}
	default:
		// Unknown operators admit nothing rather than everything.
	}
	return r
}

func firstInt(values []string) (int64, error) {
	if len(values) != 1 {
		return 0, fmt.Errorf("want exactly one value, got %d", len(values))
	}
	return strconv.ParseInt(values[0], 10, 64)
}

func ptrInt(n int64) *int64 { return &n }

func satSub(n, d int64) int64 {
	if n < math.MinInt64+d {
		return math.MinInt64
	}
	return n - d
}

func satAdd(n, d int64) int64 {
	if n > math.MaxInt64-d {
		return math.MaxInt64
	}
	return n + d
}

func (r Requirement) inBounds(v string) bool {
	if r.gt == nil && r.lt == nil {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return (r.gt == nil || n > *r.gt) && (r.lt == nil || n < *r.lt)
}

// Has reports whether a node whose label Key has value v satisfies the requirement.
func (r Requirement) Has(v string) bool {
	return r.values[v] != r.complement && r.inBounds(v)
}

// Intersect is the requirement both r and o impose.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{Key: r.Key, values: map[string]bool{}, allowsAbsent: r.allowsAbsent && o.allowsAbsent}
	out.gt, out.lt = maxPtr(r.gt, o.gt), minPtr(r.lt, o.lt)
	switch {
	case r.complement && o.complement:
		out.complement = true
		maps.Copy(out.values, r.values)
		maps.Copy(out.values, o.values)
	case r.complement:
		for v := range o.values {
			if r.Has(v) && o.inBounds(v) {
				out.values[v] = true
			}
		}
	default:
		for v := range r.values {
			if o.Has(v) && r.inBounds(v) {
				out.values[v] = true
			}
		}
	}
	return out
}

func maxPtr(a, b *int64) *int64 {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func minPtr(a, b *int64) *int64 {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// Empty reports whether no node can satisfy the requirement (not even one without the label).
func (r Requirement) Empty() bool {
	if r.allowsAbsent {
		return false
	}
	if !r.complement {
		for v := range r.values {
			if r.inBounds(v) {
				return false
			}
		}
		return true
	}
	if r.gt == nil || r.lt == nil {
		return false // infinitely many values remain
	}
	lo, hi := satAdd(*r.gt, 1), *r.lt // candidates lo..hi-1
	if hi <= lo {
		return true
	}
	if hi-lo > int64(len(r.values)) {
		return false // more candidates than excluded values
	}
	for n := lo; n < hi; n++ {
		if !r.values[strconv.FormatInt(n, 10)] {
			return false
		}
	}
	return true
}

// String renders the requirement for messages, e.g. `kubernetes.io/arch In [amd64]`.
func (r Requirement) String() string {
	vals := slices.Sorted(maps.Keys(r.values))
	var b strings.Builder
	b.WriteString(r.Key)
	switch {
	case r.complement && len(vals) == 0 && r.gt == nil && r.lt == nil:
		b.WriteString(" Exists")
	case r.complement && len(vals) > 0:
		fmt.Fprintf(&b, " NotIn %v", vals)
	case !r.complement && len(vals) == 0:
		b.WriteString(" DoesNotExist")
	case !r.complement:
		fmt.Fprintf(&b, " In %v", vals)
	}
	if r.gt != nil {
		fmt.Fprintf(&b, " Gt %d", *r.gt)
	}
	if r.lt != nil {
		fmt.Fprintf(&b, " Lt %d", *r.lt)
	}
	return b.String()
}

// Requirements are the per-key requirements of a NodePool (or a pod's selection).
type Requirements map[string]Requirement

// Add intersects a requirement into the set.
func (rs Requirements) Add(r Requirement) {
	if cur, ok := rs[r.Key]; ok {
		r = cur.Intersect(r)
	}
	rs[r.Key] = r
}

// NodePoolRequirements are a NodePool's template requirements plus its template labels (a label k=v
// is the requirement k In [v]).
func NodePoolRequirements(np *v1.NodePool) Requirements {
	rs := Requirements{}
	for _, r := range np.Spec.Template.Spec.Requirements {
		rs.Add(NewRequirement(r.Key, r.Operator, r.Values...))
	}
	for k, v := range np.Spec.Template.Labels {
		rs.Add(NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return rs
}

// Conflict returns the first key (in name order) on which the two sets admit no common node, or ""
// when some node satisfies both. Keys only one side constrains never conflict.
func (rs Requirements) Conflict(o Requirements) string {
	for _, k := range slices.Sorted(maps.Keys(rs)) {
		if other, ok := o[k]; ok && rs[k].Intersect(other).Empty() {
			return k
		}
	}
	return ""
}

// capacityTypes is the capacity-type requirement of a pool; pools that say nothing launch on-demand,
// as in Karpenter.
func (rs Requirements) capacityTypes() Requirement {
	if r, ok := rs[v1.CapacityTypeLabelKey]; ok {
		return r
	}
	return NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)
}

// Offerings returns the offerings of it that a node satisfying rs could be bought through; none means
// the requirements do not admit the instance type. knownKeys are label keys that instance types
// define (a requirement on any other key only adds a label to the node and never excludes a type).
func (rs Requirements) Offerings(it *catalog.InstanceType, knownKeys map[string]bool) []catalog.Offering {
	labels := map[string]string{v1.LabelInstanceType: it.Name}
	maps.Copy(labels, it.Labels)
	for k, r := range rs {
		if k == v1.LabelTopologyZone || k == v1.CapacityTypeLabelKey {
			continue
		}
		v, ok := labels[k]
		switch {
		case ok && !r.Has(v):
			return nil
		case !ok && knownKeys[k] && !r.allowsAbsent:
			return nil
		}
	}
	zones, hasZones := rs[v1.LabelTopologyZone]
	cts := rs.capacityTypes()
	var out []catalog.Offering
	for _, o := range it.Offerings {
		if (!hasZones || zones.Has(o.Zone)) && cts.Has(o.CapacityType) {
			out = append(out, o)
		}
	}
	return out
}

// KnownKeys are the well-known label keys plus every label key some catalog instance type defines.
func KnownKeys(catalog []*catalog.InstanceType) map[string]bool {
	keys := map[string]bool{}
	for _, k := range v1.WellKnownLabels {
		keys[k] = true
	}
	for _, it := range catalog {
		for k := range it.Labels {
			keys[k] = true
		}
	}
	return keys
}
