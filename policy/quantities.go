package policy

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
	"github.com/joist-dev/joist/quantity"
)

// RuleQuantities is the built-in rule against quantities beyond quantity's bounds.
const RuleQuantities = "quantities"

// boundsSetting: the rule always denies; no Guardrail turns it off.
var boundsSetting = Setting{Action: v1alpha1.ActionDeny, Source: BuiltIn}

// ValidatePodQuantities denies a pod whose requests, limits or overhead hold a quantity beyond
// quantity's bounds, such as "1e9999999": the apiserver stores it as written, no node holds it, and
// every exact comparison with it costs seconds.
func ValidatePodQuantities(pod *corev1.Pod) Violations {
	var vs Violations
	spec := field.NewPath("spec")
	check := func(kind string, cs []corev1.Container) {
		for i, c := range cs {
			res := spec.Child(kind).Index(i).Child("resources")
			checkList(&vs, res.Child("requests"), c.Resources.Requests)
			checkList(&vs, res.Child("limits"), c.Resources.Limits)
		}
	}
	check("initContainers", pod.Spec.InitContainers)
	check("containers", pod.Spec.Containers)
	checkList(&vs, spec.Child("overhead"), pod.Spec.Overhead)
	return vs
}

// checkList adds a violation for each quantity of list beyond the bounds.
func checkList(vs *Violations, path *field.Path, list corev1.ResourceList) {
	for _, n := range slices.Sorted(maps.Keys(list)) {
		q := list[n]
		if why := quantity.Check(q); why != "" {
			vs.add(boundsSetting, RuleQuantities, path.Key(string(n)), fmt.Sprintf(`set %s.%s to a real amount, e.g. 500m, 8Gi or "1000"`, path, n),
				"%s %s", q.String(), why)
		}
	}
}

// bounded reports whether arithmetic on all of qs is cheap.
func bounded(qs ...resource.Quantity) bool {
	for _, q := range qs {
		if quantity.Check(q) != "" {
			return false
		}
	}
	return true
}
