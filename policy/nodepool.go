package policy

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/requirements"
)

// NodePoolContext is what validating a NodePool needs besides the policy.
type NodePoolContext struct {
	// Others are the cluster's NodePools; the one validated is skipped by name.
	Others []v1.NodePool
	// Catalog is the cloud provider's instance types for the pool; nil when unknown, in which case
	// the GPU and spot rules fall back to what the requirements alone say.
	Catalog []*catalog.InstanceType
}

var (
	limitsPath       = field.NewPath("spec", "limits")
	taintsPath       = field.NewPath("spec", "template", "spec", "taints")
	expireAfterPath  = field.NewPath("spec", "template", "spec", "expireAfter")
	requirementsPath = field.NewPath("spec", "template", "spec", "requirements")
)

// ValidateNodePool checks a NodePool against every NodePool rule of the policy.
func ValidateNodePool(p Policy, np *v1.NodePool, c NodePoolContext) Violations {
	var vs Violations
	limits := corev1.ResourceList(np.Spec.Limits)
	checkList(&vs, limitsPath, limits)
	limits = maps.Clone(limits)
	maps.DeleteFunc(limits, func(_ corev1.ResourceName, q resource.Quantity) bool { return !bounded(q) })
	reqs := nodePoolSet(np)
	validateLimits(&vs, p, np, limits)
	validateGPU(&vs, p, np, reqs, c.Catalog)
	validateSpot(&vs, p, np, reqs, c.Catalog)
	others := slices.DeleteFunc(slices.Clone(c.Others), func(o v1.NodePool) bool { return o.Name == np.Name })
	sort.Slice(others, func(i, j int) bool { return others[i].Name < others[j].Name })
	validateOverlap(&vs, p, np, reqs, others)
	validateClusterLimits(&vs, p, np, limits, others)
	return vs
}

func validateLimits(vs *Violations, p Policy, np *v1.NodePool, limits corev1.ResourceList) {
	if len(p.RequiredLimitResources) == 0 {
		if !slices.ContainsFunc(BoundingLimits, func(r corev1.ResourceName) bool { _, ok := limits[r]; return ok }) {
			vs.add(p.RequireLimits, RuleRequireLimits, limitsPath,
				`set at least one of spec.limits.cpu, spec.limits.memory or spec.limits.nodes to the most this pool may ever hold, e.g. cpu: "1000"`,
				"NodePool %q sets no limit (cpu, memory or nodes), so it can grow without bound while pods are pending", np.Name)
		}
	}
	for _, r := range p.RequiredLimitResources {
		if _, ok := limits[r]; !ok {
			vs.add(p.RequireLimits, RuleRequireLimits, limitsPath.Key(string(r)),
				fmt.Sprintf("set spec.limits.%s to the most %s this pool may ever hold, e.g. %s: %q", r, r, r, exampleLimit(r)),
				"NodePool %q sets no %s limit, so it can grow without bound while pods are pending", np.Name, r)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(p.MaxLimitValues)) {
		ceiling := p.MaxLimitValues[r]
		s := Setting{Action: p.MaxLimits.Action, Source: ceiling.Source}
		builtIn := ceiling.Source == BuiltIn
		if builtIn && s.Enabled() {
			s.Action = v1alpha1.ActionWarn // beyond any real cluster: likely a typo, but not unsafe
		}
		got, ok := limits[r]
		switch {
		case !ok && !builtIn:
			vs.add(s, RuleMaxLimits, limitsPath.Key(string(r)),
				fmt.Sprintf("set spec.limits.%s to at most %s", r, ceiling.Value.String()),
				"NodePool %q sets no %s limit, but each pool may hold at most %s", np.Name, r, ceiling.Value.String())
		case ok && got.Cmp(ceiling.Value) > 0 && builtIn:
			vs.add(s, RuleMaxLimits, limitsPath.Key(string(r)),
				fmt.Sprintf("lower spec.limits.%s to what the pool may really hold; to allow more, set nodePools.maxLimits.limits.%s in a Guardrail", r, r),
				"spec.limits.%s is %s, beyond any real cluster (%s)", r, got.String(), ceiling.Value.String())
		case ok && got.Cmp(ceiling.Value) > 0:
			vs.add(s, RuleMaxLimits, limitsPath.Key(string(r)),
				fmt.Sprintf("lower spec.limits.%s to at most %s, or split the capacity across several pools", r, ceiling.Value.String()),
				"spec.limits.%s is %s, above the per-pool ceiling %s", r, got.String(), ceiling.Value.String())
		}
	}
}

func exampleLimit(r corev1.ResourceName) string {
	switch r {
	case corev1.ResourceCPU:
		return "1000"
	case corev1.ResourceMemory:
		return "4000Gi"
	}
	return "100"
}

func validateGPU(vs *Violations, p Policy, np *v1.NodePool, reqs requirements.Set, types []*catalog.InstanceType) {
	if !p.GPU.Enabled() && !p.GPUExpiry.Enabled() {
		return
	}
	why, only := acceleratorEvidence(p, reqs, types)
	if why == "" || hasRepellingTaint(np.Spec.Template.Spec.Taints) && !only {
		return
	}
	if !hasRepellingTaint(np.Spec.Template.Spec.Taints) {
		if only || p.GPU.Source != BuiltIn {
			vs.add(p.GPU, RuleGPUTaint, taintsPath,
				"add a taint such as {key: nvidia.com/gpu, value: \"true\", effect: NoSchedule} to spec.template.spec.taints and the matching toleration to the pods that need accelerators",
				"NodePool %q can launch accelerator instance types (%s) but has no NoSchedule or NoExecute taint, so any pod may land on these expensive nodes", np.Name, why)
		} else {
			// A general pool that can also reach accelerator types: the solver prefers the cheaper
			// general types, but a pod that fits only an accelerator type gets one.
			vs.add(Setting{Action: v1alpha1.ActionWarn, Source: p.GPU.Source}, RuleGPUTaint, requirementsPath,
				"exclude the accelerator families or types from the requirements (e.g. a NotIn on the instance family, or an instance-gpu-count DoesNotExist requirement), or add a NoSchedule taint and tolerate it in the pods that need accelerators",
				"NodePool %q is a general pool that can also launch accelerator instance types (%s); untainted, any pod that fits only such a type lands on an expensive node", np.Name, why)
		}
	}
	if exp := np.Spec.Template.Spec.ExpireAfter; only && !exp.IsNever() {
		vs.add(p.GPUExpiry, RuleGPUExpiry, expireAfterPath,
			"set spec.template.spec.expireAfter: Never and roll nodes through drift and disruption budgets instead",
			"NodePool %q launches accelerator instance types (%s) and its nodes expire after %s, which kills long-running jobs at expiry", np.Name, why, exp.String())
	}
}

// acceleratorEvidence explains why the pool can launch accelerator types, or returns ""; only says
// whether accelerator types are all it can launch. A requirement that asks for an accelerator
// (acceleratorIntent) decides, whatever the catalog knows: a catalog without the provider's
// accelerator labels (KWOK's, or one installed before the provider added them) would read such a
// requirement as no constraint at all. Otherwise the catalog's types decide.
func acceleratorEvidence(p Policy, reqs requirements.Set, types []*catalog.InstanceType) (why string, only bool) {
	if why := acceleratorIntent(reqs); why != "" {
		return why, true
	}
	if types == nil {
		return "", false
	}
	known := requirements.Known(types)
	general := false
	for _, it := range types {
		if len(offerings(reqs, it, known)) == 0 {
			continue
		}
		accel := false
		for _, name := range p.GPUResourceName {
			if q, ok := it.Capacity[name]; ok && q.Sign() > 0 {
				accel = true
				if why == "" {
					why = fmt.Sprintf("e.g. %s with %s %s", it.Name, q.String(), name)
				}
			}
		}
		general = general || !accel
	}
	return why, why != "" && !general
}

// acceleratorIntent describes a requirement that admits only nodes with an accelerator: a
// well-known accelerator key of some provider (isAcceleratorKey) that the node must carry, with a
// value other than "0" (e.g. karpenter.k8s.aws/instance-gpu-count Gt 0, or
// karpenter.azure.com/sku-gpu-name Exists). "" when there is none.
func acceleratorIntent(reqs requirements.Set) string {
	for _, kr := range reqs {
		if !isAcceleratorKey(kr.Key) || kr.AllowsAbsent() {
			continue
		}
		vals, finite := kr.Finite()
		if !finite || slices.ContainsFunc(vals, func(v string) bool { return v != "0" && v != "" && kr.Has(v) }) {
			return "requirement " + kr.Describe(kr.Key)
		}
	}
	return ""
}

// acceleratorKeyPrefixes are the well-known accelerator labels of the providers Joist speaks for:
// AWS's karpenter.k8s.aws/instance-gpu-{count,name,manufacturer,memory} and
// instance-accelerator-{count,name,manufacturer}, Azure's karpenter.azure.com/sku-gpu-{count,name,
// manufacturer}.
var acceleratorKeyPrefixes = []string{
	"karpenter.k8s.aws/instance-gpu-", "karpenter.k8s.aws/instance-accelerator-", "karpenter.azure.com/sku-gpu-",
}

// isAcceleratorKey recognises label keys that select accelerators: the providers' well-known keys,
// and for other providers a key whose name ends in gpu-count, gpu-name, gpu-manufacturer,
// accelerator-count, accelerator-name or accelerator-manufacturer.
func isAcceleratorKey(k string) bool {
	if slices.ContainsFunc(acceleratorKeyPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
		return true
	}
	name := k[strings.LastIndex(k, "/")+1:]
	for _, part := range []string{"gpu-count", "gpu-name", "gpu-manufacturer", "accelerator-count", "accelerator-name", "accelerator-manufacturer"} {
		if strings.HasSuffix(name, part) {
			return true
		}
	}
	return false
}

func hasRepellingTaint(ts []corev1.Taint) bool {
	return slices.ContainsFunc(ts, func(t corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	})
}

func validateSpot(vs *Violations, p Policy, np *v1.NodePool, reqs requirements.Set, types []*catalog.InstanceType) {
	if !p.Spot.Enabled() || !hasSpot(reqs) {
		return
	}
	if _, explicit := reqs.Get(v1.CapacityTypeLabelKey); !explicit && (types == nil || offersSpot(reqs, types)) {
		vs.add(Setting{Action: v1alpha1.ActionWarn, Source: p.Spot.Source}, RuleSpotImplicit, requirementsPath,
			"add {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]} to launch on-demand only, or values: [spot, on-demand] to state that spot is intended",
			"NodePool %q has no karpenter.sh/capacity-type requirement, so it launches spot capacity whenever spot is cheaper (as Karpenter v1 does), and spot nodes can be reclaimed at two minutes' notice", np.Name)
	}
	min := int(p.SpotMinInstanceTypes)
	s := Setting{Action: p.Spot.Action, Source: p.SpotMinSource}
	fix := "widen the requirements: prefer exclusion lists (NotIn) to allow lists and admit more instance families, sizes and generations"
	if types == nil {
		// Without a catalog only an explicit allow list gives a count (an upper bound).
		it, ok := reqs.Get(v1.LabelInstanceType)
		names, finite := it.Finite()
		if !ok || !finite || len(names) >= min {
			return
		}
		vs.add(s, RuleSpot, requirementsPath, fix,
			"spot-capable NodePool admits at most %d instance types (%s), fewer than %d; when spot capacity for them runs dry, pods stay Pending",
			len(names), strings.Join(names, ", "), min)
		return
	}
	known := requirements.Known(types)
	var names []string
	for _, it := range types {
		if slices.ContainsFunc(offerings(reqs, it, known), func(o catalog.Offering) bool { return o.CapacityType == v1.CapacityTypeSpot }) {
			names = append(names, it.Name)
		}
	}
	if len(names) >= min {
		return
	}
	slices.Sort(names)
	vs.add(s, RuleSpot, requirementsPath, fix,
		"spot-capable NodePool admits %d instance types of the provider catalog (%s), fewer than %d; when spot capacity for them runs dry, pods stay Pending",
		len(names), abbreviate(names, 8), min)
}

func abbreviate(names []string, n int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … %d more", len(names)-n)
}

func validateOverlap(vs *Violations, p Policy, np *v1.NodePool, reqs requirements.Set, others []v1.NodePool) {
	if !p.Overlap.Enabled() {
		return
	}
	for i := range others {
		o := &others[i]
		if o.GetWeight() != np.GetWeight() || !sameTaints(o.Spec.Template.Spec.Taints, np.Spec.Template.Spec.Taints) {
			continue
		}
		if nodePoolSet(o).And(reqs).Conflict() != "" {
			continue
		}
		vs.add(p.Overlap, RuleOverlap, requirementsPath,
			fmt.Sprintf("give one of the pools a different spec.weight (e.g. %d), or make the requirements mutually exclusive (e.g. a key that one pool requires In and the other NotIn), or give the pools different taints", np.GetWeight()+10),
			"NodePool %q overlaps NodePool %q: both have weight %d and the same taints, and no requirement key separates them, so a pod that fits both is placed on either arbitrarily",
			np.Name, o.Name, np.GetWeight())
	}
}

func sameTaints(a, b []corev1.Taint) bool {
	key := func(ts []corev1.Taint) []string {
		out := make([]string, 0, len(ts))
		for _, t := range ts {
			out = append(out, t.Key+"="+t.Value+":"+string(t.Effect))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(key(a), key(b))
}

func validateClusterLimits(vs *Violations, p Policy, np *v1.NodePool, limits corev1.ResourceList, others []v1.NodePool) {
	for _, r := range slices.Sorted(maps.Keys(p.ClusterCeilings)) {
		mine, ok := limits[r]
		if !ok {
			continue // requireLimits speaks for pools without a limit; the provisioner enforces the ceiling
		}
		ceiling := p.ClusterCeilings[r]
		sum := mine.DeepCopy()
		parts := []string{fmt.Sprintf("this pool %s", mine.String())}
		for i := range others {
			if q, ok := corev1.ResourceList(others[i].Spec.Limits)[r]; ok && bounded(q) {
				sum.Add(q)
				parts = append(parts, fmt.Sprintf("%q %s", others[i].Name, q.String()))
			}
		}
		if sum.Cmp(ceiling.Value) <= 0 {
			continue
		}
		room := ceiling.Value.DeepCopy()
		room.Sub(sum)
		room.Add(mine)
		if room.Sign() < 0 {
			room = resource.Quantity{}
		}
		vs.add(Setting{Action: p.ClusterLimits.Action, Source: ceiling.Source}, RuleClusterLimits, limitsPath.Key(string(r)),
			fmt.Sprintf("lower spec.limits.%s to at most %s, lower the other pools' limits, or raise clusterLimits.%s in %s", r, room.String(), r, ceiling.Source),
			"the declared %s limits of all NodePools add up to %s (%s), above the cluster-wide ceiling %s",
			r, sum.String(), strings.Join(parts, ", "), ceiling.Value.String())
	}
}
