package requirements

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// MetadataNameKey carries a nodeAffinity matchFields term on metadata.name; only existing nodes
// have a name, so new nodes never satisfy an In on it.
const MetadataNameKey = "\x00metadata.name"

// Keyed is one key's requirement.
type Keyed struct {
	Key string
	Requirement
}

// Set is a conjunction of per-key requirements, sorted by key; a key it does not name is
// unconstrained. Sets are values: With and And return new sets and never modify their receiver.
type Set []Keyed

// Get returns the requirement on key, and whether the set constrains key.
func (s Set) Get(key string) (Requirement, bool) {
	for i := range s {
		if s[i].Key == key {
			return s[i].Requirement, true
		}
	}
	return Requirement{}, false
}

// With returns s ∩ {key: r} as a new set.
func (s Set) With(key string, r Requirement) Set {
	out := make(Set, 0, len(s)+1)
	done := false
	for _, kr := range s {
		if kr.Key == key {
			out = append(out, Keyed{key, kr.Intersect(r)})
			done = true
			continue
		}
		if !done && kr.Key > key {
			out = append(out, Keyed{key, r})
			done = true
		}
		out = append(out, kr)
	}
	if !done {
		out = append(out, Keyed{key, r})
	}
	return out
}

// And intersects two sets.
func (s Set) And(o Set) Set {
	if len(o) == 0 {
		return s
	}
	if len(s) == 0 {
		return o
	}
	out := s
	for _, kr := range o {
		out = out.With(kr.Key, kr.Requirement)
	}
	return out
}

// Conflict returns the first key (in key order) whose requirement no node satisfies, or "".
func (s Set) Conflict() string {
	for i := range s {
		if s[i].Empty() {
			return s[i].Key
		}
	}
	return ""
}

// MatchesLabels evaluates the set against a concrete node's labels and name.
func (s Set) MatchesLabels(labels map[string]string, nodeName string) bool {
	for i := range s {
		var v string
		var ok bool
		if s[i].Key == MetadataNameKey {
			v, ok = nodeName, nodeName != ""
		} else {
			v, ok = labels[s[i].Key]
		}
		if !s[i].Matches(v, ok) {
			return false
		}
	}
	return true
}

// Signature is a string equal for equal sets, for use as a cache key.
func (s Set) Signature() string {
	var b strings.Builder
	for _, kr := range s {
		fmt.Fprintf(&b, "%s|%t|%t|%s|%t%d|%t%d;", kr.Key, kr.allowAbsent, kr.complement, strings.Join(kr.values, ","), kr.hasGt, kr.gt, kr.hasLt, kr.lt)
	}
	return b.String()
}

// FromTerm parses nodeSelector labels plus one node selector term's expressions and fields.
func FromTerm(nodeSelector map[string]string, term *corev1.NodeSelectorTerm) (Set, error) {
	var s Set
	for _, k := range sortedKeys(nodeSelector) {
		s = s.With(k, In(nodeSelector[k]))
	}
	if term == nil {
		return s, nil
	}
	for _, e := range term.MatchExpressions {
		r, err := New(e.Operator, e.Values)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", e.Key, err)
		}
		s = s.With(e.Key, r)
	}
	for _, f := range term.MatchFields {
		if f.Key != "metadata.name" {
			return nil, fmt.Errorf("unsupported matchFields key %q", f.Key)
		}
		r, err := New(f.Operator, f.Values)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Key, err)
		}
		s = s.With(MetadataNameKey, r)
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FromAPI parses NodePool or NodeClaim requirements.
func FromAPI(reqs []v1.NodeSelectorRequirementWithMinValues) (Set, error) {
	var s Set
	for _, r := range reqs {
		rq, err := New(r.Operator, r.Values)
		if err != nil {
			return nil, fmt.Errorf("requirement on %s: %w", r.Key, err)
		}
		s = s.With(r.Key, rq)
	}
	return s, nil
}

// ForNodePool is what every node of the pool satisfies: karpenter.sh/nodepool In [name], its
// template labels (k In [v]) and its requirements.
func ForNodePool(np *v1.NodePool) (Set, error) {
	s := Set{}.With(v1.NodePoolLabelKey, In(np.Name))
	for _, k := range sortedKeys(np.Spec.Template.Labels) {
		s = s.With(k, In(np.Spec.Template.Labels[k]))
	}
	rs, err := FromAPI(np.Spec.Template.Spec.Requirements)
	if err != nil {
		return nil, fmt.Errorf("NodePool %s: %w", np.Name, err)
	}
	return s.And(rs), nil
}

// ErrNoTerms is returned for a required node affinity whose terms are all empty: it matches no node.
var ErrNoTerms = errors.New("required node affinity has no usable terms")

// ForPod returns the ORed alternatives of a pod's nodeSelector and required node affinity terms.
func ForPod(spec *corev1.PodSpec) ([]Set, error) {
	var terms []corev1.NodeSelectorTerm
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) == 0 {
			return nil, ErrNoTerms
		}
	}
	if len(terms) == 0 {
		rs, err := FromTerm(spec.NodeSelector, nil)
		if err != nil {
			return nil, err
		}
		return []Set{rs}, nil
	}
	var out []Set
	for i := range terms {
		if len(terms[i].MatchExpressions) == 0 && len(terms[i].MatchFields) == 0 {
			continue
		}
		rs, err := FromTerm(spec.NodeSelector, &terms[i])
		if err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	if len(out) == 0 {
		return nil, ErrNoTerms
	}
	return out, nil
}

// Describe renders the requirement on key the way NodeSelectorRequirements read, e.g.
// `kubernetes.io/arch In [amd64]` or `k Exists, k NotIn [a]`.
func (r Requirement) Describe(key string) string {
	if key == MetadataNameKey {
		key = "metadata.name"
	}
	switch {
	case !r.complement && len(r.values) == 0:
		return key + " DoesNotExist"
	case !r.complement:
		return fmt.Sprintf("%s In [%s]", key, strings.Join(r.values, ","))
	}
	var parts []string
	if !r.allowAbsent && len(r.values) > 0 {
		parts = append(parts, key+" Exists")
	}
	if !r.allowAbsent && len(r.values) == 0 && !r.hasGt && !r.hasLt {
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

// ToAPI renders the requirement on key as NodeClaim requirements that admit exactly the same nodes.
func (r Requirement) ToAPI(key string, minValues *int) []v1.NodeSelectorRequirementWithMinValues {
	mk := func(op corev1.NodeSelectorOperator, vals ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: vals, MinValues: minValues}
	}
	switch {
	case !r.complement && len(r.values) == 0:
		return []v1.NodeSelectorRequirementWithMinValues{mk(corev1.NodeSelectorOpDoesNotExist)}
	case !r.complement:
		return []v1.NodeSelectorRequirementWithMinValues{mk(corev1.NodeSelectorOpIn, r.values...)}
	}
	var out []v1.NodeSelectorRequirementWithMinValues
	if !r.allowAbsent && !r.hasGt && !r.hasLt {
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
