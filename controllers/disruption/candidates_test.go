package disruption

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		// Karpenter hashes the whole template, expireAfter included.
		"expireAfter": func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("1h") },
	} {
		np := base.DeepCopy()
		mutate(np)
		if np.Hash() == h {
			t.Errorf("changing the template %s does not change the hash", name)
		}
	}
	for name, mutate := range map[string]func(*v1.NodePool){
		"budgets": func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}} },
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

// Karpenter's static drift check: a claim is judged only when it carries the hash and the current
// hash version; then a different hash drifts it.
func TestTemplateDriftedAsKarpenter(t *testing.T) {
	pool := &v1.NodePool{}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "g", Kind: "K", Name: "default"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"same hash", map[string]string{v1.NodePoolHashAnnotationKey: pool.Hash(), v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}, false},
		{"other hash", map[string]string{v1.NodePoolHashAnnotationKey: "1", v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}, true},
		{"other version", map[string]string{v1.NodePoolHashAnnotationKey: "1", v1.NodePoolHashVersionAnnotationKey: "v2"}, false},
		{"no hash", map[string]string{v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}, false},
		{"nothing", nil, false},
	} {
		m := &member{pool: pool, claim: &v1.NodeClaim{}}
		m.claim.Annotations = tc.annotations
		if got := templateDriftedFrom(m, pool.Hash()); got != tc.want {
			t.Errorf("%s: drifted = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A claim stamped by an older hash version moves to the current one; as in Karpenter, it gets the
// pool's hash only when it is not already drifted, so a drifted claim stays drifted.
func TestStampHashVersionKeepsDriftedClaimsDrifted(t *testing.T) {
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	old := map[string]string{v1.NodePoolHashAnnotationKey: "1", v1.NodePoolHashVersionAnnotationKey: "v2"}
	for _, tc := range []struct {
		name        string
		drifted     bool
		wantHash    string
		wantDrifted bool
	}{
		{"not drifted: adopts the pool's hash", false, pool.Hash(), false},
		{"drifted: keeps its hash", true, "1", true},
	} {
		claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: maps.Clone(old)}}
		if tc.drifted {
			claim.SetCondition(v1.ConditionTypeDrifted, metav1.ConditionTrue, v1.DriftReasonNodePoolDrifted, "")
		}
		stampHashVersion(claim, pool.Hash())
		if got := claim.Annotations[v1.NodePoolHashVersionAnnotationKey]; got != v1.NodePoolHashVersion {
			t.Errorf("%s: hash version %q, want %q", tc.name, got, v1.NodePoolHashVersion)
		}
		if got := claim.Annotations[v1.NodePoolHashAnnotationKey]; got != tc.wantHash {
			t.Errorf("%s: hash %q, want %q", tc.name, got, tc.wantHash)
		}
		if got := templateDriftedFrom(&member{pool: pool, claim: claim}, pool.Hash()); got != tc.wantDrifted {
			t.Errorf("%s: drifted after the stamp = %t, want %t", tc.name, got, tc.wantDrifted)
		}
	}
}

// Drifted nodes are evaluated a bounded number per pass, resuming after the last one evaluated, so
// every node gets its turn and no pass pays one solve per drifted node.
func TestDriftTurnRotatesWithinBudget(t *testing.T) {
	var drifted []*member
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		drifted = append(drifted, &member{claim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: n}}})
	}
	names := func(ms []*member) string {
		s := ""
		for _, m := range ms {
			s += m.claim.Name
		}
		return s
	}
	seen := map[string]bool{}
	last := ""
	for pass, want := range []string{"ab", "cd", "ea", "bc"} {
		got := names(driftTurn(drifted, last, 2))
		if got != want {
			t.Errorf("pass %d: evaluated %q, want %q", pass, got, want)
		}
		for _, r := range got {
			seen[string(r)] = true
		}
		last = got[len(got)-1:]
	}
	if len(seen) != len(drifted) {
		t.Errorf("only %d of %d drifted nodes got a turn", len(seen), len(drifted))
	}
	if got := names(driftTurn(drifted, "gone", 0)); got != "abcde" {
		t.Errorf("no budget, unknown last: %q, want all from the cheapest", got)
	}
}
