package policy

import (
	"slices"
	"sort"
	"strings"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// EnforcementOf is a Guardrail's enforcement, Deny when unset.
func EnforcementOf(g *v1alpha1.Guardrail) v1alpha1.Enforcement {
	if g.Spec.Enforcement == "" {
		return v1alpha1.EnforcementDeny
	}
	return g.Spec.Enforcement
}

func enforcementRank(e v1alpha1.Enforcement) int {
	switch e {
	case v1alpha1.EnforcementDeny:
		return 3
	case v1alpha1.EnforcementWarn:
		return 2
	case v1alpha1.EnforcementAudit:
		return 1
	}
	return 0
}

// BuiltInEnforcement is the enforcement of the built-in defaults: the strictest builtInEnforcement
// any Guardrail sets, Deny when none sets one.
func BuiltInEnforcement(guardrails []v1alpha1.Guardrail) v1alpha1.Enforcement {
	var out v1alpha1.Enforcement
	for i := range guardrails {
		if e := guardrails[i].Spec.BuiltInEnforcement; enforcementRank(e) > enforcementRank(out) {
			out = e
		}
	}
	if out == "" {
		return v1alpha1.EnforcementDeny
	}
	return out
}

// enforced are the Guardrails in Deny mode.
func enforced(guardrails []v1alpha1.Guardrail) []v1alpha1.Guardrail {
	return slices.DeleteFunc(slices.Clone(guardrails), func(g v1alpha1.Guardrail) bool {
		return EnforcementOf(&g) != v1alpha1.EnforcementDeny
	})
}

// Layer is one source of rules that can be enforced on its own: a Guardrail, or the built-in
// defaults (Guardrail "").
type Layer struct {
	Guardrail   string
	Source      string
	Enforcement v1alpha1.Enforcement
	// policy is what Joist would enforce if this layer were in Deny mode: the enforced policy plus
	// this layer. For layers in Deny mode it is the enforced policy itself.
	policy Policy
}

// Evaluation is the enforced policy and, per layer, the policy that would hold if the layer were
// enforced. Validation functions run against both answer admission (Judge) and the audit report
// (WouldDeny) with the same rules.
type Evaluation struct {
	Enforced Policy
	Layers   []Layer
	// builtInReporters are the Guardrails that set builtInEnforcement: the built-in layer's report
	// is theirs too.
	builtInReporters []string
}

// Evaluate prepares the enforced policy and one trial policy per Guardrail (in name order) and, when
// the built-in defaults are not in Deny mode, one for them.
func Evaluate(guardrails []v1alpha1.Guardrail) Evaluation {
	gs := slices.Clone(guardrails)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	deny := enforced(gs)
	builtIn := BuiltInEnforcement(gs)
	builtInsOn := builtIn == v1alpha1.EnforcementDeny
	ev := Evaluation{Enforced: merge(deny, builtInsOn)}
	for i := range gs {
		g := &gs[i]
		l := Layer{Guardrail: g.Name, Source: SourceOf(g), Enforcement: EnforcementOf(g), policy: ev.Enforced}
		if l.Enforcement != v1alpha1.EnforcementDeny {
			l.policy = merge(append(slices.Clone(deny), *g), builtInsOn)
		}
		ev.Layers = append(ev.Layers, l)
		if g.Spec.BuiltInEnforcement != "" {
			ev.builtInReporters = append(ev.builtInReporters, g.Name)
		}
	}
	l := Layer{Source: BuiltIn, Enforcement: builtIn, policy: ev.Enforced}
	if !builtInsOn {
		l.policy = merge(deny, true)
	}
	ev.Layers = append(ev.Layers, l)
	return ev
}

// violationKey identifies a violation across policies.
func violationKey(v Violation) string { return v.Rule + "|" + v.Field.String() + "|" + v.Problem }

// denials are the violations whose action is deny, by key.
func denials(vs Violations) map[string]bool {
	out := map[string]bool{}
	for _, v := range vs {
		if v.Setting.Action == v1alpha1.ActionDeny {
			out[violationKey(v)] = true
		}
	}
	return out
}

// Judge answers admission: the enforced policy's violations as they are, plus, for each layer in
// Warn mode, what it would deny or warn about beyond them, as warnings that say so. Layers in Audit
// mode add nothing.
func (ev Evaluation) Judge(validate func(Policy) Violations) Violations {
	out := validate(ev.Enforced)
	seen := map[string]bool{}
	for _, v := range out {
		seen[violationKey(v)] = true
	}
	for _, l := range ev.Layers {
		if l.Enforcement != v1alpha1.EnforcementWarn {
			continue
		}
		for _, v := range validate(l.policy) {
			if !v.Setting.Enabled() || seen[violationKey(v)] {
				continue
			}
			seen[violationKey(v)] = true
			if v.Setting.Action == v1alpha1.ActionDeny {
				v.Problem = "would be denied once enforced (" + l.Source + " has enforcement Warn): " + v.Problem
			}
			v.Setting.Action = v1alpha1.ActionWarn
			out = append(out, v)
		}
	}
	return out
}

// WouldDeny returns, per Guardrail name ("" for the built-in defaults), the violations that would deny the object if that
// Guardrail were in Deny mode: for a Guardrail in Warn or Audit, the denials its trial policy adds
// to the enforced one; for one in Deny, the enforced denials it is a source of (objects admitted
// before the rule existed).
func (ev Evaluation) WouldDeny(validate func(Policy) Violations) map[string]Violations {
	base := validate(ev.Enforced)
	enforcedDenials := denials(base)
	out := map[string]Violations{}
	for _, l := range ev.Layers {
		var vs Violations
		if l.Enforcement == v1alpha1.EnforcementDeny {
			for _, v := range base {
				if v.Setting.Action == v1alpha1.ActionDeny && fromSource(v, l.Source) {
					vs = append(vs, v)
				}
			}
		} else {
			for _, v := range validate(l.policy) {
				if v.Setting.Action == v1alpha1.ActionDeny && !enforcedDenials[violationKey(v)] {
					vs = append(vs, v)
				}
			}
		}
		if len(vs) == 0 {
			continue
		}
		out[l.Guardrail] = append(out[l.Guardrail], vs...)
	}
	return out
}

// BuiltInReporters are the Guardrails that set builtInEnforcement: the built-in layer's report
// (WouldDeny's "" entry) belongs in their status too.
func (ev Evaluation) BuiltInReporters() []string { return ev.builtInReporters }

// fromSource: a violation's source names one Guardrail, the built-in default, or several Guardrails
// joined by ", " (NodePool bindings).
func fromSource(v Violation, source string) bool {
	return slices.Contains(strings.Split(v.Setting.Source, ", "), source)
}
