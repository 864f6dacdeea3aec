package policy

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/joist-dev/joist/api/v1"
)

// ParseDoNotDisrupt reads a karpenter.sh/do-not-disrupt value: "true" protects forever, "false" (or
// "") not at all, and a Go duration such as "4h" for that long after the object was created.
func ParseDoNotDisrupt(value string) (forever bool, d time.Duration, err error) {
	switch value {
	case "true":
		return true, 0, nil
	case "false", "":
		return false, 0, nil
	}
	d, err = time.ParseDuration(value)
	if err != nil || d <= 0 {
		return false, 0, fmt.Errorf("%q is neither \"true\", \"false\" nor a positive duration such as \"4h\"", value)
	}
	return false, d, nil
}

// DoNotDisruptUntil says until when an object with this annotation value, created at created, is
// protected; forever is true for "true", and protected is false once a duration has run out (or for
// "false" and invalid values). It is the reading the disruption controller should apply.
func DoNotDisruptUntil(value string, created, now time.Time) (protected, forever bool, until time.Time) {
	forever, d, err := ParseDoNotDisrupt(value)
	if err != nil {
		return false, false, time.Time{}
	}
	if forever {
		return true, true, time.Time{}
	}
	if d == 0 {
		return false, false, time.Time{}
	}
	until = created.Add(d)
	return now.Before(until), false, until
}

var doNotDisruptPath = field.NewPath("metadata", "annotations").Key(v1.DoNotDisruptAnnotationKey)

// ValidateDoNotDisrupt checks the karpenter.sh/do-not-disrupt annotation of a Pod, Node or NodeClaim
// (kind) against the policy. old is the object before an update (nil on create); an unchanged value
// is never re-judged. nsLabels are the labels of a pod's namespace.
func ValidateDoNotDisrupt(p Policy, kind string, obj, old metav1.Object, nsLabels map[string]string) Violations {
	value, ok := obj.GetAnnotations()[v1.DoNotDisruptAnnotationKey]
	if !ok || value == "false" || value == "" || (old != nil && old.GetAnnotations()[v1.DoNotDisruptAnnotationKey] == value) {
		return nil // "false" protects nothing, so anyone may write it
	}
	var vs Violations
	s := p.DoNotDisrupt
	if kind == "Pod" {
		for _, sel := range p.DoNotDisruptSelectors {
			if !selects(sel.Item, nsLabels) {
				vs.add(Setting{Action: s.Action, Source: sel.Source}, RuleDoNotDisrupt+".namespaceSelector", doNotDisruptPath,
					fmt.Sprintf("remove the annotation, or ask the platform team to label namespace %q so it matches %s", obj.GetNamespace(), describeSelector(sel.Item)),
					"namespace %q may not use %s", obj.GetNamespace(), v1.DoNotDisruptAnnotationKey)
			}
		}
	} else if !p.AllowOnNodes {
		vs.add(Setting{Action: s.Action, Source: p.AllowOnNodesSource}, RuleDoNotDisrupt+".allowOnNodes", doNotDisruptPath,
			"remove the annotation and protect the workload with a PodDisruptionBudget or a pod-level annotation instead",
			"%s %q may not carry %s", kind, obj.GetName(), v1.DoNotDisruptAnnotationKey)
	}
	forever, d, err := ParseDoNotDisrupt(value)
	max := "a duration"
	if p.MaxDoNotDisrupt != nil {
		max = fmt.Sprintf("a duration of at most %s", p.MaxDoNotDisrupt)
	}
	switch {
	case err != nil:
		vs.add(Setting{Action: s.Action, Source: s.Source}, RuleDoNotDisrupt, doNotDisruptPath,
			fmt.Sprintf("set it to \"true\", \"false\" or %s such as \"2h\"", max), "%s", err.Error())
	case forever && !p.AllowForever:
		vs.add(Setting{Action: s.Action, Source: p.AllowForeverSource}, RuleDoNotDisrupt+".allowForever", doNotDisruptPath,
			fmt.Sprintf("set it to %s, e.g. \"2h\", counted from the %s's creation", max, strings.ToLower(kind)),
			"%q (protection without end) is not allowed", value)
	case d > 0 && p.MaxDoNotDisrupt != nil && d > *p.MaxDoNotDisrupt:
		vs.add(Setting{Action: s.Action, Source: p.MaxDoNotDisruptSource}, RuleDoNotDisrupt+".maxDuration", doNotDisruptPath,
			fmt.Sprintf("set it to at most %q", p.MaxDoNotDisrupt.String()),
			"%q is longer than the allowed %s", value, p.MaxDoNotDisrupt)
	}
	return vs
}

func describeSelector(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "the doNotDisrupt.namespaceSelector"
	}
	return fmt.Sprintf("the selector %q", s.String())
}
