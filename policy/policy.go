// Package policy is the pure logic behind Joist's admission webhooks: it merges Guardrails into one
// effective Policy (strictest wins, built-in defaults for what no Guardrail says) and validates or
// defaults objects against it. No API client, no clock: callers pass in everything a decision needs.
package policy

import (
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

// BuiltIn names the source of a setting no Guardrail makes.
const BuiltIn = "built-in default"

// ResourceNodes is the spec.limits / clusterLimits key for a node count.
const ResourceNodes corev1.ResourceName = "nodes"

// Defaults that apply when no Guardrail sets a value.
var (
	// BoundingLimits are the limits any one of which bounds a pool: without a Guardrail naming
	// requireLimits.resources, a pool must set at least one of them.
	BoundingLimits = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, ResourceNodes}
	// DefaultMaxCPULimit is the per-pool cpu limit beyond any real cluster: a larger one is warned
	// about (a typo such as an extra zero, or a limit meant as "unlimited"). A Guardrail's
	// nodePools.maxLimits.limits.cpu replaces it, with the Guardrail's action.
	DefaultMaxCPULimit  = resource.MustParse("100000")
	DefaultGPUResources = []corev1.ResourceName{
		"nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "habana.ai/gaudi", "google.com/tpu",
	}
	DefaultSpotMinInstanceTypes int32 = 10
)

// Rule names, as they appear in messages and docs.
const (
	RuleRequireLimits  = "nodePools.requireLimits"
	RuleMaxLimits      = "nodePools.maxLimits"
	RuleGPUTaint       = "nodePools.gpu"
	RuleGPUExpiry      = "nodePools.gpu.expireAfterAction"
	RuleSpot           = "nodePools.spot.minInstanceTypes"
	RuleSpotImplicit   = "nodePools.spot.implicit"
	RuleOverlap        = "nodePools.overlap"
	RuleClusterLimits  = "clusterLimits"
	RuleBindings       = "nodePoolBindings"
	RuleDoNotDisrupt   = "doNotDisrupt"
	RulePodDefaults    = "podDefaults"
	RuleGuardrailValid = "guardrail"
)

// Setting is an action with the Guardrail it came from.
type Setting struct {
	Action v1alpha1.Action
	Source string
}

// Enabled reports whether the rule does anything.
func (s Setting) Enabled() bool {
	return s.Action == v1alpha1.ActionDeny || s.Action == v1alpha1.ActionWarn
}

// Limit is one ceiling with the Guardrail it came from.
type Limit struct {
	Value  resource.Quantity
	Source string
}

// Policy is the effective policy: all Guardrails merged, defaults filled in.
type Policy struct {
	RequireLimits Setting
	// RequiredLimitResources are the limits a Guardrail requires each pool to set; empty means the
	// built-in rule: at least one of BoundingLimits.
	RequiredLimitResources []corev1.ResourceName

	MaxLimits      Setting
	MaxLimitValues map[corev1.ResourceName]Limit

	GPU             Setting
	GPUExpiry       Setting
	GPUResourceName []corev1.ResourceName

	Spot                 Setting
	SpotMinInstanceTypes int32
	SpotMinSource        string

	Overlap Setting

	ClusterLimits Setting
	// ClusterCeilings holds cpu, memory and nodes ceilings that some Guardrail sets.
	ClusterCeilings map[corev1.ResourceName]Limit

	PodDefaults []Sourced[v1alpha1.PodDefaults]
	Bindings    []Sourced[v1alpha1.NodePoolBinding]

	DoNotDisrupt          Setting
	DoNotDisruptSelectors []Sourced[*metav1.LabelSelector]
	MaxDoNotDisrupt       *time.Duration
	MaxDoNotDisruptSource string
	AllowForever          bool
	AllowForeverSource    string
	AllowOnNodes          bool
	AllowOnNodesSource    string
}

// Sourced is a list entry with the Guardrail it came from.
type Sourced[T any] struct {
	Item   T
	Source string
}

// SourceOf names a Guardrail in messages.
func SourceOf(g *v1alpha1.Guardrail) string { return fmt.Sprintf("Guardrail %q", g.Name) }

func rank(a v1alpha1.Action) int {
	switch a {
	case v1alpha1.ActionDeny:
		return 3
	case v1alpha1.ActionWarn:
		return 2
	case v1alpha1.ActionOff:
		return 1
	}
	return 0
}

// stricter folds an explicit action into s: the strictest explicit action wins.
func (s *Setting) stricter(a v1alpha1.Action, source string) {
	if a == "" {
		return
	}
	if s.Source == "" || rank(a) > rank(s.Action) {
		*s = Setting{Action: a, Source: source}
	}
}

// orDefault fills an action no Guardrail set: the built-in default when builtIns are enforced;
// otherwise the rule's default action attributed to the first Guardrail (by name) that configures
// the rule (configured names that Guardrail, or ""), and off when none does.
func (s *Setting) orDefault(a v1alpha1.Action, builtIns bool, configured string) {
	switch {
	case s.Source != "":
	case builtIns:
		*s = Setting{Action: a, Source: BuiltIn}
	case configured != "":
		*s = Setting{Action: a, Source: configured}
	default:
		*s = Setting{Action: v1alpha1.ActionOff, Source: BuiltIn}
	}
}

// Merge returns the policy Joist enforces: the Guardrails whose enforcement is Deny merged into one
// (see merge), with the built-in defaults unless the Guardrails' builtInEnforcement says Warn or
// Audit. Guardrails in Warn or Audit change nothing that is enforced; Evaluate reports them.
func Merge(guardrails []v1alpha1.Guardrail) Policy {
	return merge(enforced(guardrails), BuiltInEnforcement(guardrails) == v1alpha1.EnforcementDeny)
}

// merge returns the effective policy of the given Guardrails. With several Guardrails the strictest
// value of every setting wins (deny > warn > off; the lower ceiling; the larger minimum; the
// intersection of permissions); settings that no Guardrail makes take the built-in defaults when
// builtIns is true, and are off otherwise.
// Guardrails are visited in name order so that ties name the same source every time.
func merge(guardrails []v1alpha1.Guardrail, builtIns bool) Policy {
	gs := slices.Clone(guardrails)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	p := Policy{
		MaxLimitValues:  map[corev1.ResourceName]Limit{},
		ClusterCeilings: map[corev1.ResourceName]Limit{},
		AllowForever:    true,
		AllowOnNodes:    true,
	}
	required := map[corev1.ResourceName]bool{}
	gpuNames := map[corev1.ResourceName]bool{}
	configured := map[string]string{} // rule section -> first Guardrail that configures it
	configure := func(section, src string) {
		if configured[section] == "" {
			configured[section] = src
		}
	}
	for i := range gs {
		g := &gs[i]
		src := SourceOf(g)
		np := g.Spec.NodePools
		for section, set := range map[string]bool{
			RuleRequireLimits: np.RequireLimits != nil, RuleMaxLimits: np.MaxLimits != nil, RuleGPUTaint: np.GPU != nil,
			RuleSpot: np.Spot != nil, RuleOverlap: np.Overlap != nil, RuleClusterLimits: g.Spec.ClusterLimits != nil,
			RuleDoNotDisrupt: g.Spec.DoNotDisrupt != nil,
		} {
			if set {
				configure(section, src)
			}
		}
		if r := np.RequireLimits; r != nil {
			p.RequireLimits.stricter(r.Action, src)
			for _, n := range r.Resources {
				required[n] = true
			}
		}
		if r := np.MaxLimits; r != nil {
			p.MaxLimits.stricter(r.Action, src)
			for n, q := range r.Limits {
				lowerCeiling(p.MaxLimitValues, n, q, src)
			}
		}
		if r := np.GPU; r != nil {
			p.GPU.stricter(r.Action, src)
			p.GPUExpiry.stricter(r.ExpireAfterAction, src)
			for _, n := range r.ResourceNames {
				gpuNames[n] = true
			}
		}
		if r := np.Spot; r != nil {
			p.Spot.stricter(r.Action, src)
			if r.MinInstanceTypes != nil && *r.MinInstanceTypes > p.SpotMinInstanceTypes {
				p.SpotMinInstanceTypes, p.SpotMinSource = *r.MinInstanceTypes, src
			}
		}
		if r := np.Overlap; r != nil {
			p.Overlap.stricter(r.Action, src)
		}
		if c := g.Spec.ClusterLimits; c != nil {
			p.ClusterLimits.stricter(c.Action, src)
			if c.CPU != nil {
				lowerCeiling(p.ClusterCeilings, corev1.ResourceCPU, *c.CPU, src)
			}
			if c.Memory != nil {
				lowerCeiling(p.ClusterCeilings, corev1.ResourceMemory, *c.Memory, src)
			}
			if c.Nodes != nil {
				lowerCeiling(p.ClusterCeilings, ResourceNodes, *resource.NewQuantity(*c.Nodes, resource.DecimalSI), src)
			}
		}
		for _, d := range g.Spec.PodDefaults {
			p.PodDefaults = append(p.PodDefaults, Sourced[v1alpha1.PodDefaults]{Item: d, Source: src})
		}
		for _, b := range g.Spec.NodePoolBindings {
			p.Bindings = append(p.Bindings, Sourced[v1alpha1.NodePoolBinding]{Item: b, Source: src})
		}
		if d := g.Spec.DoNotDisrupt; d != nil {
			p.mergeDoNotDisrupt(d, src)
		}
	}
	p.RequireLimits.orDefault(v1alpha1.ActionDeny, builtIns, configured[RuleRequireLimits])
	p.RequiredLimitResources = sortedNames(required, nil)
	p.MaxLimits.orDefault(v1alpha1.ActionDeny, builtIns, configured[RuleMaxLimits])
	if _, ok := p.MaxLimitValues[corev1.ResourceCPU]; !ok && builtIns {
		p.MaxLimitValues[corev1.ResourceCPU] = Limit{Value: DefaultMaxCPULimit.DeepCopy(), Source: BuiltIn}
	}
	p.GPU.orDefault(v1alpha1.ActionDeny, builtIns, configured[RuleGPUTaint])
	p.GPUExpiry.orDefault(v1alpha1.ActionWarn, builtIns, configured[RuleGPUTaint])
	p.GPUResourceName = sortedNames(gpuNames, DefaultGPUResources)
	p.Spot.orDefault(v1alpha1.ActionWarn, builtIns, configured[RuleSpot])
	if p.SpotMinInstanceTypes == 0 {
		p.SpotMinInstanceTypes, p.SpotMinSource = DefaultSpotMinInstanceTypes, BuiltIn
	}
	p.Overlap.orDefault(v1alpha1.ActionDeny, builtIns, configured[RuleOverlap])
	p.ClusterLimits.orDefault(v1alpha1.ActionDeny, builtIns, configured[RuleClusterLimits])
	p.DoNotDisrupt.orDefault(v1alpha1.ActionDeny, builtIns, configured[RuleDoNotDisrupt])
	if p.AllowForeverSource == "" {
		p.AllowForeverSource = BuiltIn
	}
	if p.AllowOnNodesSource == "" {
		p.AllowOnNodesSource = BuiltIn
	}
	return p
}

func (p *Policy) mergeDoNotDisrupt(d *v1alpha1.DoNotDisruptRules, src string) {
	p.DoNotDisrupt.stricter(d.Action, src)
	if d.NamespaceSelector != nil {
		p.DoNotDisruptSelectors = append(p.DoNotDisruptSelectors, Sourced[*metav1.LabelSelector]{Item: d.NamespaceSelector, Source: src})
	}
	if d.MaxDuration != nil && (p.MaxDoNotDisrupt == nil || d.MaxDuration.Duration < *p.MaxDoNotDisrupt) {
		v := d.MaxDuration.Duration
		p.MaxDoNotDisrupt, p.MaxDoNotDisruptSource = &v, src
	}
	if d.AllowForever != nil && (p.AllowForeverSource == "" || (p.AllowForever && !*d.AllowForever)) {
		p.AllowForever, p.AllowForeverSource = *d.AllowForever, src
	}
	if d.AllowOnNodes != nil && (p.AllowOnNodesSource == "" || (p.AllowOnNodes && !*d.AllowOnNodes)) {
		p.AllowOnNodes, p.AllowOnNodesSource = *d.AllowOnNodes, src
	}
}

// lowerCeiling keeps the lower of two ceilings. A ceiling beyond quantity's bounds is none: the
// Guardrail webhook refuses it, and comparing it would cost seconds each time the policy is merged.
func lowerCeiling(m map[corev1.ResourceName]Limit, n corev1.ResourceName, q resource.Quantity, src string) {
	if !bounded(q) {
		return
	}
	if cur, ok := m[n]; !ok || q.Cmp(cur.Value) < 0 {
		m[n] = Limit{Value: q.DeepCopy(), Source: src}
	}
}

func sortedNames(set map[corev1.ResourceName]bool, def []corev1.ResourceName) []corev1.ResourceName {
	if len(set) == 0 {
		return slices.Clone(def)
	}
	out := make([]corev1.ResourceName, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
