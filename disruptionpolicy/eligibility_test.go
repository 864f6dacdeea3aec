package disruptionpolicy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	created := metav1.NewTime(now.Add(-time.Hour))
	mk := func() (*Node, *[]*policyv1.PodDisruptionBudget) {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc", CreationTimestamp: created}}
		nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
		nc.Status.Conditions[0].LastTransitionTime = created
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", CreationTimestamp: created}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "shop", CreationTimestamp: created, Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{NodeName: "node"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
		pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("5m")
		return &Node{Node: node, Claim: nc, Pool: pool, Pods: []*corev1.Pod{pod}, LastPodEvent: now.Add(-10 * time.Minute)}, &[]*policyv1.PodDisruptionBudget{}
	}
	budget := func(allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
			Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
	}
	for _, tc := range []struct {
		name         string
		mutate       func(*Node, *[]*policyv1.PodDisruptionBudget)
		want         string // substring of Blocked(), "" for none
		wantKind     string
		consolidates bool
	}{
		{name: "free", consolidates: true},
		{name: "not initialized", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) { n.Claim.ClearCondition(v1.ConditionTypeInitialized) }, want: "not initialized"},
		{name: "already disrupting", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Node.Spec.Taints = []corev1.Taint{v1.DisruptedNoScheduleTaint}
		}, want: "already being disrupted"},
		{name: "node do-not-disrupt", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		}, want: "node node has", wantKind: KindNode},
		{name: "claim do-not-disrupt duration", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Claim.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "2h"}
		}, want: "nodeclaim nc has karpenter.sh/do-not-disrupt until 2026-12-01T13:00:00Z", wantKind: KindNodeClaim},
		{name: "claim do-not-disrupt expired", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Claim.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "30m"}
		}, consolidates: true},
		{name: "pod do-not-disrupt", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
		}, want: "pod shop/db-0 has", wantKind: KindPod},
		{name: "pod do-not-disrupt false", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "false"}
		}, consolidates: true},
		{name: "PDB allows none", mutate: func(_ *Node, b *[]*policyv1.PodDisruptionBudget) { *b = append(*b, budget(0)) },
			want: "PodDisruptionBudget shop/db allows no eviction now", wantKind: KindPodDisruptionBudget},
		{name: "PDB allows none, pod tolerates the disrupted taint and stays", mutate: func(n *Node, b *[]*policyv1.PodDisruptionBudget) {
			*b = append(*b, budget(0))
			n.Pods[0].Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, consolidates: true},
		{name: "PDB allows one", mutate: func(_ *Node, b *[]*policyv1.PodDisruptionBudget) { *b = append(*b, budget(1)) }, consolidates: true},
		{name: "consolidateAfter not passed", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.LastPodEvent = now.Add(-time.Minute)
		}},
		// The last pod event is before the node initialized (its pods were created pending): counted
		// from InitializedSettle after the initialization, as the loop wrote it before storing the
		// real time (SettledPodEvent); the same with no last pod event known.
		{name: "initialized 5s ago, consolidateAfter 0s", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Claim.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-5 * time.Second))
			n.Pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		}},
		{name: "initialized 5s ago, no pod event known", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Claim.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-5 * time.Second))
			n.Pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
			n.LastPodEvent = time.Time{}
		}},
		{name: "initialized 11s ago, consolidateAfter 0s", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Claim.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-11 * time.Second))
			n.Pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		}, consolidates: true},
		{name: "initialized 4m55s ago, consolidateAfter 5m", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Claim.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-4*time.Minute - 55*time.Second))
		}},
		{name: "consolidateAfter Never", mutate: func(n *Node, _ *[]*policyv1.PodDisruptionBudget) {
			n.Pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, pdbs := mk()
			if tc.mutate != nil {
				tc.mutate(n, pdbs)
			}
			v := Judge(*n, NewPDBs(*pdbs), now)
			got := v.Blocked()
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Blocked() = %q, want %q", got, tc.want)
			}
			if tc.wantKind != "" && (v.Protection == nil || v.Protection.Kind != tc.wantKind) {
				t.Errorf("protection %+v, want kind %s", v.Protection, tc.wantKind)
			}
			if v.Consolidatable != tc.consolidates {
				t.Errorf("Consolidatable = %t (%s), want %t", v.Consolidatable, v.NotConsolidatable, tc.consolidates)
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
		if got := Expired(nc, now); got != tc.want {
			t.Errorf("expireAfter %s: expired = %t, want %t", tc.expireAfter, got, tc.want)
		}
	}
}

// Drift proceeds past a pod's do-not-disrupt or PDB once terminationGracePeriod bounds the drain,
// never past the Node's or NodeClaim's own do-not-disrupt (Karpenter v1's eventual disruption).
func TestDriftBlocked(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		nodeDND, tgp   bool
		podDND, pdb0   bool
		wantBlocked    bool
		wantConsBlocks bool
	}{
		{name: "pod do-not-disrupt, no TGP", podDND: true, wantBlocked: true, wantConsBlocks: true},
		{name: "pod do-not-disrupt, TGP", podDND: true, tgp: true, wantConsBlocks: true},
		{name: "PDB, TGP", pdb0: true, tgp: true, wantConsBlocks: true},
		{name: "PDB, no TGP", pdb0: true, wantBlocked: true, wantConsBlocks: true},
		{name: "node do-not-disrupt, TGP", nodeDND: true, tgp: true, wantBlocked: true, wantConsBlocks: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc"}}
			nc.SetCondition(v1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", "")
			if tc.tgp {
				nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node"}}
			if tc.nodeDND {
				node.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
			if tc.podDND {
				pod.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
			}
			var pdbs []*policyv1.PodDisruptionBudget
			if tc.pdb0 {
				pdbs = append(pdbs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
					Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}}})
			}
			v := Judge(Node{Node: node, Claim: nc, Pods: []*corev1.Pod{pod}}, NewPDBs(pdbs), now)
			if got := v.DriftBlocked(nc) != ""; got != tc.wantBlocked {
				t.Errorf("DriftBlocked = %q, want blocked %t", v.DriftBlocked(nc), tc.wantBlocked)
			}
			if got := v.Blocked() != ""; got != tc.wantConsBlocks {
				t.Errorf("Blocked = %q, want blocked %t", v.Blocked(), tc.wantConsBlocks)
			}
		})
	}
}
