package v1_test

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/joist-dev/joist/api/v1"
)

// The value Karpenter v1.15.0's NodePool.Hash gives the sample pool (the figure in issue 19;
// bench/upstream checks Joist against Karpenter's own function on random pools).
func TestNodePoolHashIsKarpentersOnTheSample(t *testing.T) {
	data, err := os.ReadFile("../../config/samples/karpenter_v1_nodepool_kwok.yaml")
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{}
	if err := yaml.UnmarshalStrict(data, np); err != nil {
		t.Fatal(err)
	}
	if got, want := np.Hash(), "329923811497465139"; got != want {
		t.Errorf("hash of config/samples/karpenter_v1_nodepool_kwok.yaml = %s, want Karpenter's %s", got, want)
	}
}

// Behaviour fields and requirements leave the hash alone; what a node is made of changes it.
func TestNodePoolHashCoversTheTemplateOnly(t *testing.T) {
	base := func() *v1.NodePool {
		return &v1.NodePool{Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
			ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
				Taints:       []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoExecute}},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
			},
		}}}
	}
	h := base().Hash()
	same := map[string]func(*v1.NodePool){
		"weight":     func(np *v1.NodePool) { w := int32(7); np.Spec.Weight = &w },
		"limits":     func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("10")} },
		"disruption": func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1m") },
		"requirements": func(np *v1.NodePool) {
			np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: corev1.NodeSelectorOpExists}}
		},
		"taint order": func(np *v1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		},
	}
	for name, mutate := range same {
		np := base()
		mutate(np)
		if np.Hash() != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]func(*v1.NodePool){
		"label":      func(np *v1.NodePool) { np.Spec.Template.Labels["team"] = "b" },
		"annotation": func(np *v1.NodePool) { np.Spec.Template.Annotations = map[string]string{"x": "y"} },
		"taint":      func(np *v1.NodePool) { np.Spec.Template.Spec.Taints[0].Value = "v" },
		"startup taint": func(np *v1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoSchedule}}
		},
		"nodeclass":         func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" },
		"expireAfter":       func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h") },
		"expireAfter Never": func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never) },
		"terminationGracePeriod": func(np *v1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 3600e9}
		},
	}
	for name, mutate := range differ {
		np := base()
		mutate(np)
		if np.Hash() == h {
			t.Errorf("%s left the hash unchanged", name)
		}
	}
}
