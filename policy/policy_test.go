package policy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joist-dev/joist/api/policy/v1alpha1"
)

func TestMergeDefaults(t *testing.T) {
	t.Parallel()
	p := Merge(nil)
	checks := []struct {
		name string
		got  Setting
		want v1alpha1.Action
	}{
		{"requireLimits", p.RequireLimits, v1alpha1.ActionDeny},
		{"maxLimits", p.MaxLimits, v1alpha1.ActionDeny},
		{"gpu", p.GPU, v1alpha1.ActionDeny},
		{"gpu expiry", p.GPUExpiry, v1alpha1.ActionWarn},
		{"spot", p.Spot, v1alpha1.ActionWarn},
		{"overlap", p.Overlap, v1alpha1.ActionDeny},
		{"clusterLimits", p.ClusterLimits, v1alpha1.ActionDeny},
		{"doNotDisrupt", p.DoNotDisrupt, v1alpha1.ActionDeny},
	}
	for _, c := range checks {
		if c.got.Action != c.want || c.got.Source != BuiltIn {
			t.Errorf("%s = %+v, want %s from %s", c.name, c.got, c.want, BuiltIn)
		}
	}
	if len(p.RequiredLimitResources) != 0 {
		t.Errorf("required limits = %v, want none (the built-in rule: any one of cpu, memory, nodes)", p.RequiredLimitResources)
	}
	if c := p.MaxLimitValues[corev1.ResourceCPU]; len(p.MaxLimitValues) != 1 || c.Value.String() != "100k" || c.Source != BuiltIn {
		t.Errorf("max limits %v, want only the built-in cpu ceiling of 100000", p.MaxLimitValues)
	}
	if p.SpotMinInstanceTypes != 10 || len(p.ClusterCeilings) != 0 {
		t.Errorf("spot min %d, ceilings %v", p.SpotMinInstanceTypes, p.ClusterCeilings)
	}
	if !p.AllowForever || !p.AllowOnNodes || p.MaxDoNotDisrupt != nil {
		t.Errorf("do-not-disrupt defaults: forever %v nodes %v max %v", p.AllowForever, p.AllowOnNodes, p.MaxDoNotDisrupt)
	}
}

func TestMergeStrictestWins(t *testing.T) {
	t.Parallel()
	a := guardrail("a", v1alpha1.GuardrailSpec{
		NodePools: v1alpha1.NodePoolRules{
			RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionWarn, Resources: []corev1.ResourceName{"cpu"}},
			MaxLimits:     &v1alpha1.MaxLimitsRule{Limits: corev1.ResourceList{"cpu": *q("500"), "memory": *q("1Ti")}},
			Spot:          &v1alpha1.SpotRule{MinInstanceTypes: ptr(int32(5))},
			Overlap:       &v1alpha1.OverlapRule{Action: v1alpha1.ActionOff},
		},
		ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("1000"), Nodes: ptr(int64(50))},
		DoNotDisrupt:  &v1alpha1.DoNotDisruptRules{MaxDuration: &metav1.Duration{Duration: 4 * time.Hour}, AllowForever: ptr(true)},
	})
	b := guardrail("b", v1alpha1.GuardrailSpec{
		NodePools: v1alpha1.NodePoolRules{
			RequireLimits: &v1alpha1.RequireLimitsRule{Action: v1alpha1.ActionDeny, Resources: []corev1.ResourceName{"memory", "nvidia.com/gpu"}},
			MaxLimits:     &v1alpha1.MaxLimitsRule{Action: v1alpha1.ActionWarn, Limits: corev1.ResourceList{"cpu": *q("200")}},
			Spot:          &v1alpha1.SpotRule{Action: v1alpha1.ActionDeny, MinInstanceTypes: ptr(int32(20))},
			Overlap:       &v1alpha1.OverlapRule{Action: v1alpha1.ActionWarn},
		},
		ClusterLimits: &v1alpha1.ClusterLimits{CPU: q("2000"), Memory: q("8Ti"), Action: v1alpha1.ActionWarn},
		DoNotDisrupt:  &v1alpha1.DoNotDisruptRules{MaxDuration: &metav1.Duration{Duration: 2 * time.Hour}, AllowForever: ptr(false)},
	})
	// Order of the input must not matter.
	for _, in := range [][]v1alpha1.Guardrail{{a, b}, {b, a}} {
		p := Merge(in)
		if p.RequireLimits != (Setting{v1alpha1.ActionDeny, `Guardrail "b"`}) {
			t.Errorf("requireLimits = %+v", p.RequireLimits)
		}
		if got := p.RequiredLimitResources; len(got) != 3 || got[0] != "cpu" || got[1] != "memory" || got[2] != "nvidia.com/gpu" {
			t.Errorf("required resources = %v, want union", got)
		}
		if l := p.MaxLimitValues["cpu"]; l.Value.String() != "200" || l.Source != `Guardrail "b"` {
			t.Errorf("max cpu = %+v, want 200 from b", l)
		}
		if l := p.MaxLimitValues["memory"]; l.Value.String() != "1Ti" || l.Source != `Guardrail "a"` {
			t.Errorf("max memory = %+v, want 1Ti from a", l)
		}
		if p.MaxLimits.Action != v1alpha1.ActionWarn {
			t.Errorf("maxLimits action = %s: only b sets one (warn)", p.MaxLimits.Action)
		}
		if p.SpotMinInstanceTypes != 20 || p.Spot.Action != v1alpha1.ActionDeny {
			t.Errorf("spot = %d %s", p.SpotMinInstanceTypes, p.Spot.Action)
		}
		if p.Overlap.Action != v1alpha1.ActionWarn {
			t.Errorf("overlap = %s, want warn (warn beats off)", p.Overlap.Action)
		}
		if c := p.ClusterCeilings["cpu"]; c.Value.String() != "1k" && c.Value.String() != "1000" {
			t.Errorf("cluster cpu = %s", c.Value.String())
		}
		if c := p.ClusterCeilings["memory"]; c.Value.String() != "8Ti" || c.Source != `Guardrail "b"` {
			t.Errorf("cluster memory = %+v", c)
		}
		if c := p.ClusterCeilings[ResourceNodes]; c.Value.Value() != 50 {
			t.Errorf("cluster nodes = %v", c.Value)
		}
		if p.ClusterLimits.Action != v1alpha1.ActionWarn {
			t.Errorf("clusterLimits action = %s", p.ClusterLimits.Action)
		}
		if *p.MaxDoNotDisrupt != 2*time.Hour || p.AllowForever || p.AllowForeverSource != `Guardrail "b"` {
			t.Errorf("do-not-disrupt = %v %v %s", *p.MaxDoNotDisrupt, p.AllowForever, p.AllowForeverSource)
		}
	}
}

func TestViolationsExceptPreexisting(t *testing.T) {
	t.Parallel()
	p := Merge(nil)
	old := ValidateNodePool(p, pool("a", limits()), NodePoolContext{})
	cur := ValidateNodePool(p, pool("a", limits(), label("team", "x")), NodePoolContext{})
	errs, warns := cur.ExceptPreexisting(old).Split()
	if len(errs) != 0 || len(warns) != 1 {
		t.Fatalf("errs %v warns %v: an unchanged missing limit must only warn on update", errs, warns)
	}
	// A newly broken rule on update still denies.
	errs, _ = ValidateNodePool(p, pool("a", limits()), NodePoolContext{}).ExceptPreexisting(
		ValidateNodePool(p, pool("a"), NodePoolContext{})).Split()
	if len(errs) != 1 {
		t.Fatalf("errs %v, want the newly missing limit denied", errs)
	}
}
