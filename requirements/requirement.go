// Package requirements is Joist's one model of node requirements: a NodePool's requirements and
// template labels, a pod's nodeSelector and node affinity, and a NodeClaim's requirements all parse
// into it; it intersects them, matches them against labels, and holds the single rule for label keys
// an instance type does not define (see KnownKeys). The solver compiles its bitsets from it, the cloud
// providers choose launches with it and the guardrails reason with it.
package requirements

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// Requirement is the set of values one label key may take on a node: a finite set (In), or the
// complement of one (NotIn, Exists), optionally narrowed by integer bounds (Gt, Lt, Gte, Lte); and
// whether a node without the label satisfies it (NotIn, DoesNotExist). The zero value admits no
// node at all.
type Requirement struct {
	allowAbsent bool
	complement  bool
	values      []string // sorted, unique
	hasGt       bool
	gt          int64 // exclusive lower bound
	hasLt       bool
	lt          int64 // exclusive upper bound
}

// New parses one node selector requirement. Gt, Lt, Gte and Lte take exactly one integer.
func New(op corev1.NodeSelectorOperator, values []string) (Requirement, error) {
	switch op {
	case corev1.NodeSelectorOpIn:
		return Requirement{values: sortedUnique(values)}, nil
	case corev1.NodeSelectorOpNotIn:
		return Requirement{allowAbsent: true, complement: true, values: sortedUnique(values)}, nil
	case corev1.NodeSelectorOpExists:
		return Requirement{complement: true}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return Requirement{allowAbsent: true}, nil
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if len(values) != 1 {
			return Requirement{}, fmt.Errorf("operator %s needs exactly one value, got %d", op, len(values))
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return Requirement{}, fmt.Errorf("operator %s: %w", op, err)
		}
		r := Requirement{complement: true}
		switch op {
		case corev1.NodeSelectorOpGt:
			r.hasGt, r.gt = true, n
		case v1.NodeSelectorOpGte:
			r.hasGt, r.gt = n > math.MinInt64, n-1
		case corev1.NodeSelectorOpLt:
			r.hasLt, r.lt = true, n
		default:
			if n == math.MaxInt64 {
				return r, nil
			}
			r.hasLt, r.lt = true, n+1
		}
		return r, nil
	}
	return Requirement{}, fmt.Errorf("unknown operator %q", op)
}

// In is the requirement that the label takes one of values.
func In(values ...string) Requirement { return Requirement{values: sortedUnique(values)} }

// Exists is the requirement that the label is present, with any value.
func Exists() Requirement { return Requirement{complement: true} }

// Any is the requirement nothing constrains: every value, and absence, satisfy it.
func Any() Requirement { return Requirement{allowAbsent: true, complement: true} }

func sortedUnique(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

func containsSorted(vals []string, v string) bool {
	_, ok := slices.BinarySearch(vals, v)
	return ok
}

func (r *Requirement) inBounds(v string) bool {
	if !r.hasGt && !r.hasLt {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return (!r.hasGt || n > r.gt) && (!r.hasLt || n < r.lt)
}

// Matches reports whether a node whose label is v (present) or missing (!present) satisfies r.
func (r *Requirement) Matches(v string, present bool) bool {
	if !present {
		return r.allowAbsent
	}
	return containsSorted(r.values, v) != r.complement && r.inBounds(v)
}

// Has reports whether a node carrying the label with value v satisfies r.
func (r *Requirement) Has(v string) bool { return r.Matches(v, true) }

// AllowsAbsent reports whether a node without the label satisfies r.
func (r *Requirement) AllowsAbsent() bool { return r.allowAbsent }

// Finite returns the allowed values when r lists them (In), and false when r is a complement
// (NotIn, Exists, bounds) that allows values it does not name.
func (r *Requirement) Finite() ([]string, bool) {
	if r.complement {
		return nil, false
	}
	return r.values, true
}

// Excluded returns the values a complement requirement (NotIn) names; nil for In.
func (r *Requirement) Excluded() []string {
	if !r.complement {
		return nil
	}
	return r.values
}

// Unconstrained reports whether every value and absence satisfy r.
func (r *Requirement) Unconstrained() bool {
	return r.allowAbsent && r.complement && len(r.values) == 0 && !r.hasGt && !r.hasLt
}

// HasValue reports whether some label value (not absence) satisfies r.
func (r *Requirement) HasValue() bool {
	if !r.complement {
		return len(r.values) > 0
	}
	if !r.hasGt || !r.hasLt {
		return true // infinitely many values remain
	}
	if r.gt >= r.lt-1 {
		return false
	}
	lo, hi := r.gt+1, r.lt // candidates lo..hi-1
	if uint64(hi-lo) > uint64(len(r.values)) {
		return true
	}
	for n := lo; n < hi; n++ {
		if !containsSorted(r.values, strconv.FormatInt(n, 10)) {
			return true
		}
	}
	return false
}

// Sample returns the label value a node gets for a key only a NodePool's requirements define (its
// instance types never set it), as Karpenter labels NodeClaims from their requirements: the first
// value of In; for Exists, Gt, Lt, Gte and Lte, which demand the label without naming a value, the
// smallest non-negative integer they allow (or the largest allowed below zero). false when absence
// satisfies r (NotIn, DoesNotExist): such a node carries no label, as no value is needed.
func (r *Requirement) Sample() (string, bool) {
	if r.allowAbsent || !r.HasValue() {
		return "", false
	}
	if !r.complement {
		return r.values[0], true
	}
	lo := int64(0)
	if r.hasGt && r.gt >= 0 {
		lo = r.gt + 1
	}
	step := int64(1)
	if r.hasLt && r.lt <= lo {
		lo, step = r.lt-1, -1 // every allowed value is below zero
	}
	for n, i := lo, 0; i <= len(r.values); n, i = n+step, i+1 {
		if v := strconv.FormatInt(n, 10); r.Has(v) {
			return v, true
		}
	}
	return "", false
}

// Empty reports whether no node at all, with or without the label, satisfies r.
func (r *Requirement) Empty() bool { return !r.allowAbsent && !r.HasValue() }

// Intersect is the requirement both r and o impose.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{allowAbsent: r.allowAbsent && o.allowAbsent}
	out.hasGt, out.gt = r.hasGt, r.gt
	if o.hasGt && (!out.hasGt || o.gt > out.gt) {
		out.hasGt, out.gt = true, o.gt
	}
	out.hasLt, out.lt = r.hasLt, r.lt
	if o.hasLt && (!out.hasLt || o.lt < out.lt) {
		out.hasLt, out.lt = true, o.lt
	}
	switch {
	case r.complement && o.complement:
		out.complement = true
		switch {
		case len(o.values) == 0:
			out.values = r.values
		case len(r.values) == 0:
			out.values = o.values
		default:
			out.values = sortedUnique(append(slices.Clone(r.values), o.values...))
		}
	case r.complement:
		out.values = filter(o.values, func(v string) bool { return !containsSorted(r.values, v) })
	case o.complement:
		out.values = filter(r.values, func(v string) bool { return !containsSorted(o.values, v) })
	default:
		out.values = filter(r.values, func(v string) bool { return containsSorted(o.values, v) })
	}
	if !out.complement && (out.hasGt || out.hasLt) {
		out.values = filter(out.values, out.inBounds)
		out.hasGt, out.hasLt = false, false
	}
	if out.complement && !out.HasValue() {
		out.complement, out.values, out.hasGt, out.hasLt = false, nil, false, false
	}
	return out
}

func filter(vals []string, keep func(string) bool) []string {
	var out []string
	for _, v := range vals {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
