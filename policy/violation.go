package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// Violation is one broken rule: what, where, why, and how to fix it.
type Violation struct {
	Rule    string
	Setting Setting
	Field   *field.Path
	// Problem says what is wrong, naming any other object involved.
	Problem string
	Fix     string
}

// Detail is the message text: "rule R (Guardrail "g"): problem; fix: fix".
func (v Violation) Detail() string {
	return fmt.Sprintf("rule %s (%s): %s; fix: %s", v.Rule, v.Setting.Source, v.Problem, v.Fix)
}

// Violations is a list of violations of one object.
type Violations []Violation

func (vs *Violations) add(s Setting, rule string, path *field.Path, fix string, format string, args ...any) {
	if !s.Enabled() {
		return
	}
	*vs = append(*vs, Violation{Rule: rule, Setting: s, Field: path, Problem: fmt.Sprintf(format, args...), Fix: fix})
}

// Errors are the violations whose action is deny, as a field.ErrorList.
func (vs Violations) Errors() field.ErrorList {
	var errs field.ErrorList
	for _, v := range vs {
		if v.Setting.Action == v1alpha1.ActionDeny {
			errs = append(errs, field.Forbidden(v.Field, v.Detail()))
		}
	}
	return errs
}

// Warnings are the violations whose action is warn, formatted like kubectl shows field errors.
func (vs Violations) Warnings() []string {
	var out []string
	for _, v := range vs {
		if v.Setting.Action == v1alpha1.ActionWarn {
			out = append(out, v.Field.String()+": "+v.Detail())
		}
	}
	return out
}

// Split returns the denials and the warnings.
func (vs Violations) Split() (field.ErrorList, []string) { return vs.Errors(), vs.Warnings() }

// ExceptPreexisting turns denials that the old object already had (same rule and field) into
// warnings, so that tightening a Guardrail never blocks unrelated updates of existing objects.
func (vs Violations) ExceptPreexisting(old Violations) Violations {
	had := map[string]bool{}
	for _, v := range old {
		had[v.Rule+"|"+v.Field.String()] = true
	}
	out := make(Violations, 0, len(vs))
	for _, v := range vs {
		if v.Setting.Action == v1alpha1.ActionDeny && had[v.Rule+"|"+v.Field.String()] {
			v.Setting.Action = v1alpha1.ActionWarn
			v.Problem = "already the case before this update: " + v.Problem
		}
		out = append(out, v)
	}
	return out
}
