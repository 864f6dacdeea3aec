package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestNodePoolHashCoversTheTemplateNotBehaviour(t *testing.T) {
	base := &v1.NodePool{}
	base.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "g", Kind: "K", Name: "default"}
	h := base.Hash()
	for name, mutate := range map[string]func(*v1.NodePool){
		"label": func(np *v1.NodePool) { np.Spec.Template.Labels = map[string]string{"team": "a"} },
		"taint": func(np *v1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		},
		"nodeclassref": func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" },
	} {
		np := base.DeepCopy()
		mutate(np)
		if np.Hash() == h {
			t.Errorf("changing the template %s does not change the hash", name)
		}
	}
	for name, mutate := range map[string]func(*v1.NodePool){
		"expireAfter": func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("1h") },
		"budgets":     func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}} },
		"requirements": func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: corev1.NodeSelectorOpExists}}
		},
	} {
		np := base.DeepCopy()
		mutate(np)
		if np.Hash() != h {
			t.Errorf("changing %s changes the hash: it must not drift nodes", name)
		}
	}
}
