package disruption

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestBlockedReason(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-time.Hour))
	mk := func() (*cluster, *member) {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc", CreationTimestamp: created}}
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", CreationTimestamp: created}}
		nc.Status.NodeName = "node"
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop", CreationTimestamp: created, Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{NodeName: "node"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		cl := &cluster{claims: []*v1.NodeClaim{nc}, nodes: map[string]*corev1.Node{"node": node}, podsByNode: map[string][]*corev1.Pod{"node": {pod}}}
		return cl, &member{claim: nc, node: node, pods: []*corev1.Pod{pod}}
	}
	budget := func(allowed int32) pdb {
		return pdb{obj: &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}, selector: labels.SelectorFromSet(labels.Set{"app": "db"})}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*cluster, *member)
		want   string
	}{
		{name: "free", want: ""},
		{name: "not initialized", mutate: func(_ *cluster, m *member) { m.claim.ClearCondition(v1.ConditionTypeInitialized) }, want: "not initialized"},
		{name: "already disrupting", mutate: func(_ *cluster, m *member) { m.node.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint} }, want: "already being disrupted"},
		{name: "node do-not-disrupt", mutate: func(_ *cluster, m *member) {
			m.node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		}, want: "node node has"},
		{name: "claim do-not-disrupt duration", mutate: func(_ *cluster, m *member) {
			m.claim.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "2h"}
		}, want: "nodeclaim nc has"},
		{name: "claim do-not-disrupt expired", mutate: func(_ *cluster, m *member) {
			m.claim.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "30m"}
		}, want: ""},
		{name: "pod do-not-disrupt", mutate: func(_ *cluster, m *member) {
			m.pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		}, want: "pod shop/db-0 has"},
		{name: "pod do-not-disrupt false", mutate: func(_ *cluster, m *member) {
			m.pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "false"}
		}, want: ""},
		{name: "PDB allows none", mutate: func(cl *cluster, _ *member) { cl.pdbs = []pdb{budget(0)} }, want: "PodDisruptionBudget db allows no eviction"},
		{name: "PDB allows one", mutate: func(cl *cluster, _ *member) { cl.pdbs = []pdb{budget(1)} }, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, m := mk()
			if tc.mutate != nil {
				tc.mutate(cl, m)
			}
			got := blockedReason(cl, m, now)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("blockedReason = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))}}
	for _, tc := range []struct {
		expireAfter string
		want        bool
	}{{"1h", true}, {"2h", true}, {"3h", false}, {"Never", false}} {
		nc.Spec.ExpireAfter = v1.MustParseNillableDuration(tc.expireAfter)
		if got := expired(nc, now); got != tc.want {
			t.Errorf("expireAfter %s: expired = %t, want %t", tc.expireAfter, got, tc.want)
		}
	}
}

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
		if got := templateDrifted(m); got != tc.want {
			t.Errorf("%s: drifted = %t, want %t", tc.name, got, tc.want)
		}
	}
}
