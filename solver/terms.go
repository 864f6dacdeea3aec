package solver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// podMatcher selects pods as a pod (anti-)affinity term or a spread does: by namespace (the term's
// namespaces list together with the namespaces its namespaceSelector selects; the owner's namespace
// when both are unset; every namespace for an empty namespaceSelector) and by label selector.
type podMatcher struct {
	allNS bool
	ns    []string
	nsSel labels.Selector // nil when the term has no namespaceSelector
	sel   labels.Selector
	nsl   namespaceLabels
}

// namespaceLabels resolves a namespace's labels (Input.Namespaces) for namespaceSelectors.
type namespaceLabels map[string]labels.Set

// of is the namespace's labels; every namespace carries kubernetes.io/metadata.name (the API server
// sets it), so a selector on it works even for a namespace the input does not list.
func (n namespaceLabels) of(ns string) labels.Set {
	if l, ok := n[ns]; ok {
		return l
	}
	return labels.Set{corev1.LabelMetadataName: ns}
}

func newNamespaceLabels(in map[string]map[string]string) namespaceLabels {
	out := namespaceLabels{}
	for ns, l := range in {
		set := labels.Set{}
		for k, v := range l {
			set[k] = v
		}
		set[corev1.LabelMetadataName] = ns
		out[ns] = set
	}
	return out
}

func (m *podMatcher) matches(ns string, l labels.Set) bool {
	if !m.allNS && !containsSorted(m.ns, ns) && (m.nsSel == nil || !m.nsSel.Matches(m.nsl.of(ns))) {
		return false
	}
	return m.sel.Matches(l)
}

// id identifies the pods the matcher selects.
func (m *podMatcher) id() string {
	nsSel := "-"
	if m.nsSel != nil {
		nsSel = m.nsSel.String()
	}
	return fmt.Sprintf("%t|%s|%s|%s", m.allNS, strings.Join(m.ns, ","), nsSel, m.sel.String())
}

// describe names the namespaces of a matcher that are not just the owner's, for reasons.
func (m *podMatcher) describeNS() string {
	switch {
	case m.allNS:
		return ", all namespaces"
	case m.nsSel != nil:
		return fmt.Sprintf(", namespaces %v and those matching %q", m.ns, m.nsSel.String())
	case len(m.ns) > 1:
		return fmt.Sprintf(", namespaces %v", m.ns)
	}
	return ""
}

// termMatcher builds the matcher of a pod affinity term owned by a pod of namespace ownerNS with
// labels ownerLabels.
func (s *solver) termMatcher(ownerNS string, ownerLabels map[string]string, t *corev1.PodAffinityTerm) (podMatcher, error) {
	sel, err := selectorWithKeys(t.LabelSelector, ownerLabels, t.MatchLabelKeys, t.MismatchLabelKeys)
	if err != nil {
		return podMatcher{}, err
	}
	m := podMatcher{sel: sel, nsl: s.nsLabels, ns: uniqSorted(append([]string(nil), t.Namespaces...))}
	if t.NamespaceSelector != nil {
		nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return podMatcher{}, fmt.Errorf("namespaceSelector: %w", err)
		}
		if nsSel.Empty() {
			m.allNS = true
		} else {
			m.nsSel = nsSel
		}
	}
	if len(m.ns) == 0 && t.NamespaceSelector == nil {
		m.ns = []string{ownerNS}
	}
	return m, nil
}
