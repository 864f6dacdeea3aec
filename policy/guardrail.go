package policy

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/quantity"
)

// ValidateGuardrail checks that a Guardrail is consistent. knownPools, when not nil, are the names of
// existing NodePools; bindings to other names only warn (the pool may be created later).
func ValidateGuardrail(g *v1alpha1.Guardrail, knownPools map[string]bool) (field.ErrorList, []string) {
	var errs field.ErrorList
	var warns []string
	spec := field.NewPath("spec")
	np := spec.Child("nodePools")
	if m := g.Spec.NodePools.MaxLimits; m != nil {
		for _, n := range slices.Sorted(maps.Keys(m.Limits)) {
			errs = append(errs, nonNegative(np.Child("maxLimits", "limits").Key(string(n)), m.Limits[n])...)
		}
	}
	if gpu := g.Spec.NodePools.GPU; gpu != nil {
		for i, n := range gpu.ResourceNames {
			for _, msg := range validation.IsQualifiedName(string(n)) {
				errs = append(errs, field.Invalid(np.Child("gpu", "resourceNames").Index(i), n, msg))
			}
		}
	}
	if c := g.Spec.ClusterLimits; c != nil {
		cl := spec.Child("clusterLimits")
		for name, q := range map[string]*resource.Quantity{"cpu": c.CPU, "memory": c.Memory} {
			if q == nil {
				continue
			}
			errs = append(errs, nonNegative(cl.Child(name), *q)...)
			if q.IsZero() {
				warns = append(warns, fmt.Sprintf("%s: a ceiling of 0 stops Joist from launching any node", cl.Child(name)))
			}
		}
		if c.Nodes != nil && *c.Nodes == 0 {
			warns = append(warns, fmt.Sprintf("%s: a ceiling of 0 stops Joist from launching any node", cl.Child("nodes")))
		}
	}
	for i, d := range g.Spec.PodDefaults {
		path := spec.Child("podDefaults").Index(i)
		errs = append(errs, validSelector(path.Child("namespaceSelector"), d.NamespaceSelector)...)
		for _, n := range slices.Sorted(maps.Keys(d.DefaultRequests)) {
			req := d.DefaultRequests[n]
			errs = append(errs, nonNegative(path.Child("defaultRequests").Key(string(n)), req)...)
			if lim, ok := d.DefaultLimits[n]; ok && bounded(req, lim) && req.Cmp(lim) > 0 {
				errs = append(errs, field.Invalid(path.Child("defaultRequests").Key(string(n)), req.String(),
					fmt.Sprintf("default request is above the default limit %s; fix: lower defaultRequests.%s or raise defaultLimits.%s", lim.String(), n, n)))
			}
		}
		for _, n := range slices.Sorted(maps.Keys(d.DefaultLimits)) {
			errs = append(errs, nonNegative(path.Child("defaultLimits").Key(string(n)), d.DefaultLimits[n])...)
		}
		if len(d.DefaultRequests) == 0 && len(d.DefaultLimits) == 0 && !d.AlignNonCPURequests {
			warns = append(warns, fmt.Sprintf("%s: sets no defaults and no alignment, so it changes nothing", path))
		}
	}
	for i, b := range g.Spec.NodePoolBindings {
		path := spec.Child("nodePoolBindings").Index(i)
		errs = append(errs, validSelector(path.Child("namespaceSelector"), &b.NamespaceSelector)...)
		if len(b.NodePools) == 0 {
			errs = append(errs, field.Required(path.Child("nodePools"), "list the NodePools the selected namespaces may use"))
		}
		for j, name := range b.NodePools {
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				errs = append(errs, field.Invalid(path.Child("nodePools").Index(j), name, msgs[0]))
			} else if knownPools != nil && !knownPools[name] {
				warns = append(warns, fmt.Sprintf("%s: NodePool %q does not exist (yet); pods of the selected namespaces stay Pending until it does", path.Child("nodePools").Index(j), name))
			}
		}
	}
	if d := g.Spec.DoNotDisrupt; d != nil {
		path := spec.Child("doNotDisrupt")
		errs = append(errs, validSelector(path.Child("namespaceSelector"), d.NamespaceSelector)...)
		if d.MaxDuration != nil && d.MaxDuration.Duration <= 0 {
			errs = append(errs, field.Invalid(path.Child("maxDuration"), d.MaxDuration.String(), "must be positive"))
		}
	}
	return errs, warns
}

// nonNegative refuses a negative quantity, and one beyond quantity's bounds (arithmetic on it would
// stall every admission and solve that reads it).
func nonNegative(path *field.Path, q resource.Quantity) field.ErrorList {
	if why := quantity.Check(q); why != "" {
		return field.ErrorList{field.Invalid(path, q.String(), why+`; fix: write e.g. "4", 500m, 8Gi`)}
	}
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(path, q.String(), "must not be negative")}
	}
	return nil
}

func validSelector(path *field.Path, sel *metav1.LabelSelector) field.ErrorList {
	if sel == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return field.ErrorList{field.Invalid(path, sel.String(), err.Error())}
	}
	return nil
}
