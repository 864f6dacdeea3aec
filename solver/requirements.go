package solver

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// fieldNameKey carries a nodeAffinity matchFields term on metadata.name; only existing nodes have it.
const fieldNameKey = "\x00metadata.name"

// req is the set of values one label key may take. With any=false, values lists the allowed
// values; with any=true every value except values is allowed. allowAbsent says whether a node
// without the label satisfies it. gt/lt are exclusive integer bounds.
type req struct {
	allowAbsent bool
	any         bool
	values      []string
	hasGt       bool
	gt          int64
	hasLt       bool
	lt          int64
}

type keyedReq struct {
	key string
	req
}

// reqSet is a conjunction of per-key requirements, sorted by key.
type reqSet []keyedReq

func newReq(op corev1.NodeSelectorOperator, values []string) (req, error) {
	vals := uniqSorted(values)
	switch op {
	case corev1.NodeSelectorOpIn:
		return req{values: vals}, nil
	case corev1.NodeSelectorOpNotIn:
		return req{allowAbsent: true, any: true, values: vals}, nil
	case corev1.NodeSelectorOpExists:
		return req{any: true}, nil
	case corev1.NodeSelectorOpDoesNotExist:
		return req{allowAbsent: true}, nil
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte:
		if len(values) != 1 {
			return req{}, fmt.Errorf("operator %s needs exactly one value", op)
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return req{}, fmt.Errorf("operator %s: %w", op, err)
		}
		r := req{any: true}
		switch op {
		case corev1.NodeSelectorOpGt:
			r.hasGt, r.gt = true, n
		case v1.NodeSelectorOpGte:
			r.hasGt, r.gt = true, n-1
		case corev1.NodeSelectorOpLt:
			r.hasLt, r.lt = true, n
		default:
			r.hasLt, r.lt = true, n+1
		}
		return r, nil
	}
	return req{}, fmt.Errorf("unknown operator %q", op)
}

func uniqSorted(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := append([]string(nil), values...)
	sort.Strings(out)
	w := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[w-1] {
			out[w] = out[i]
			w++
		}
	}
	return out[:w]
}

func containsSorted(vals []string, v string) bool {
	i := sort.SearchStrings(vals, v)
	return i < len(vals) && vals[i] == v
}

func (r *req) boundsOK(v string) bool {
	if !r.hasGt && !r.hasLt {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return (!r.hasGt || n > r.gt) && (!r.hasLt || n < r.lt)
}

// matches reports whether a label (value v, present or not) satisfies r.
func (r *req) matches(v string, present bool) bool {
	if !present {
		return r.allowAbsent
	}
	if r.any {
		return !containsSorted(r.values, v) && r.boundsOK(v)
	}
	return containsSorted(r.values, v) && r.boundsOK(v)
}

// hasValue reports whether some present value satisfies r.
func (r *req) hasValue() bool {
	if r.any {
		return !(r.hasGt && r.hasLt && r.lt <= r.gt+1)
	}
	return len(r.values) > 0
}

// empty reports whether nothing (no value, not absence) satisfies r.
func (r *req) empty() bool { return !r.allowAbsent && !r.hasValue() }

func intersect(a, b req) req {
	out := req{allowAbsent: a.allowAbsent && b.allowAbsent}
	out.hasGt, out.gt = a.hasGt, a.gt
	if b.hasGt && (!out.hasGt || b.gt > out.gt) {
		out.hasGt, out.gt = true, b.gt
	}
	out.hasLt, out.lt = a.hasLt, a.lt
	if b.hasLt && (!out.hasLt || b.lt < out.lt) {
		out.hasLt, out.lt = true, b.lt
	}
	switch {
	case a.any && b.any:
		out.any = true
		out.values = uniqSorted(append(append([]string(nil), a.values...), b.values...))
	case a.any:
		out.values = filterValues(b.values, func(v string) bool { return !containsSorted(a.values, v) })
	case b.any:
		out.values = filterValues(a.values, func(v string) bool { return !containsSorted(b.values, v) })
	default:
		out.values = filterValues(a.values, func(v string) bool { return containsSorted(b.values, v) })
	}
	if !out.any && (out.hasGt || out.hasLt) {
		out.values = filterValues(out.values, out.boundsOK)
	}
	if out.any && !out.hasValue() {
		out.any, out.values, out.hasGt, out.hasLt = false, nil, false, false
	}
	return out
}

func filterValues(vals []string, keep func(string) bool) []string {
	var out []string
	for _, v := range vals {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

func (s reqSet) get(key string) (req, bool) {
	for i := range s {
		if s[i].key == key {
			return s[i].req, true
		}
	}
	return req{}, false
}

// with returns s ∩ {key: r} as a new set.
func (s reqSet) with(key string, r req) reqSet {
	out := make(reqSet, 0, len(s)+1)
	done := false
	for _, kr := range s {
		if kr.key == key {
			out = append(out, keyedReq{key, intersect(kr.req, r)})
			done = true
			continue
		}
		if !done && kr.key > key {
			out = append(out, keyedReq{key, r})
			done = true
		}
		out = append(out, kr)
	}
	if !done {
		out = append(out, keyedReq{key, r})
	}
	return out
}

// and intersects two sets.
func (s reqSet) and(o reqSet) reqSet {
	if len(o) == 0 {
		return s
	}
	if len(s) == 0 {
		return o
	}
	out := s
	for _, kr := range o {
		out = out.with(kr.key, kr.req)
	}
	return out
}

// conflict returns the first key whose requirement nothing satisfies, or "".
func (s reqSet) conflict() string {
	for _, kr := range s {
		if kr.empty() {
			return kr.key
		}
	}
	return ""
}

// matchesLabels evaluates the set against a concrete node.
func (s reqSet) matchesLabels(labels map[string]string, nodeName string) bool {
	for i := range s {
		var v string
		var ok bool
		if s[i].key == fieldNameKey {
			v, ok = nodeName, nodeName != ""
		} else {
			v, ok = labels[s[i].key]
		}
		if !s[i].matches(v, ok) {
			return false
		}
	}
	return true
}

func (s reqSet) signature() string {
	var b strings.Builder
	for _, kr := range s {
		fmt.Fprintf(&b, "%s|%t|%t|%s|%t%d|%t%d;", kr.key, kr.allowAbsent, kr.any, strings.Join(kr.values, ","), kr.hasGt, kr.gt, kr.hasLt, kr.lt)
	}
	return b.String()
}

// fromNodeSelectorTerm converts nodeSelector labels plus one term's expressions and fields.
func reqsFromTerm(nodeSelector map[string]string, term *corev1.NodeSelectorTerm) (reqSet, error) {
	var s reqSet
	keys := make([]string, 0, len(nodeSelector))
	for k := range nodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s = s.with(k, req{values: []string{nodeSelector[k]}})
	}
	if term == nil {
		return s, nil
	}
	for _, e := range term.MatchExpressions {
		r, err := newReq(e.Operator, e.Values)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", e.Key, err)
		}
		s = s.with(e.Key, r)
	}
	for _, f := range term.MatchFields {
		if f.Key != "metadata.name" {
			return nil, fmt.Errorf("unsupported matchFields key %q", f.Key)
		}
		r, err := newReq(f.Operator, f.Values)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Key, err)
		}
		s = s.with(fieldNameKey, r)
	}
	return s, nil
}

// describe renders one requirement the way a NodeSelectorRequirement reads.
func describeReq(key string, r req) string {
	if key == fieldNameKey {
		key = "metadata.name"
	}
	switch {
	case !r.any && len(r.values) == 0:
		return key + " DoesNotExist"
	case !r.any:
		return fmt.Sprintf("%s In [%s]", key, strings.Join(r.values, ","))
	}
	var parts []string
	if !r.allowAbsent {
		parts = append(parts, key+" Exists")
	}
	if len(r.values) > 0 {
		parts = append(parts, fmt.Sprintf("%s NotIn [%s]", key, strings.Join(r.values, ",")))
	}
	if r.hasGt {
		parts = append(parts, fmt.Sprintf("%s Gt %d", key, r.gt))
	}
	if r.hasLt {
		parts = append(parts, fmt.Sprintf("%s Lt %d", key, r.lt))
	}
	if len(parts) == 0 {
		return key + " (any)"
	}
	return strings.Join(parts, ", ")
}

// toAPI renders a requirement as NodeSelectorRequirementWithMinValues entries.
func toAPI(key string, r req, minValues *int) []v1.NodeSelectorRequirementWithMinValues {
	mk := func(op corev1.NodeSelectorOperator, vals ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: vals, MinValues: minValues}
	}
	switch {
	case !r.any && len(r.values) == 0:
		return []v1.NodeSelectorRequirementWithMinValues{mk(corev1.NodeSelectorOpDoesNotExist)}
	case !r.any:
		return []v1.NodeSelectorRequirementWithMinValues{mk(corev1.NodeSelectorOpIn, r.values...)}
	}
	var out []v1.NodeSelectorRequirementWithMinValues
	if !r.allowAbsent && len(r.values) == 0 && !r.hasGt && !r.hasLt {
		out = append(out, mk(corev1.NodeSelectorOpExists))
	}
	if !r.allowAbsent && len(r.values) > 0 {
		out = append(out, mk(corev1.NodeSelectorOpExists))
	}
	if len(r.values) > 0 {
		out = append(out, mk(corev1.NodeSelectorOpNotIn, r.values...))
	}
	if r.hasGt {
		out = append(out, mk(corev1.NodeSelectorOpGt, strconv.FormatInt(r.gt, 10)))
	}
	if r.hasLt {
		out = append(out, mk(corev1.NodeSelectorOpLt, strconv.FormatInt(r.lt, 10)))
	}
	return out
}
