package solver_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

// runningNode is an existing node of pool on type it, with pods bound to it.
func runningNode(name, pool string, it *catalog.InstanceType, zone, ct string, bound ...*corev1.Pod) solver.ExistingNode {
	labels := map[string]string{
		v1.LabelHostname: name, v1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: ct,
		v1.LabelInstanceType: it.Name, v1.NodePoolLabelKey: pool,
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	for _, p := range bound {
		p.Spec.NodeName = name
		p.Status.Phase = corev1.PodRunning
	}
	return solver.ExistingNode{Name: name, NodeClaim: name, NodePool: pool, Labels: labels, Allocatable: it.Allocatable(), Pods: bound}
}

func allCandidates(in solver.Input) []solver.Candidate {
	var out []solver.Candidate
	for _, n := range in.Nodes {
		out = append(out, solver.Candidate{Node: n.Name})
	}
	return out
}

func budgets(n int, pools ...string) map[string]solver.DisruptionBudget {
	out := map[string]solver.DisruptionBudget{}
	for _, p := range pools {
		out[p] = solver.DisruptionBudget{v1.DisruptionReasonEmpty: n, v1.DisruptionReasonUnderutilized: n, v1.DisruptionReasonDrifted: n}
	}
	return out
}

// consolidate runs the planner and checks every command with the verifier: the moved pods' new
// places are valid on the nodes left, every moved pod is placed, and no command raises $/h.
func consolidate(t testing.TB, in solver.ConsolidationInput) solver.ConsolidationPlan {
	t.Helper()
	plan := solver.Consolidate(in)
	gone := map[string]bool{}
	byName := map[string]solver.ExistingNode{}
	for _, n := range in.Nodes {
		byName[n.Name] = n
	}
	for ci, cmd := range plan.Commands {
		if cmd.Reason == v1.DisruptionReasonUnderutilized && cmd.SavingsPerHour <= 0 {
			t.Fatalf("command %d saves %.4f $/h: a command must never raise cost", ci, cmd.SavingsPerHour)
		}
		deleting := map[string]bool{}
		var moved []*corev1.Pod
		for _, name := range cmd.Delete {
			deleting[name] = true
			for _, p := range byName[name].Pods {
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && !isDaemon(p) {
					moved = append(moved, p)
				}
			}
		}
		sub := solver.Input{NodePools: in.NodePools, DaemonSets: in.DaemonSets, Pods: moved}
		for _, n := range in.Nodes {
			if !deleting[n.Name] && !gone[n.Name] {
				sub.Nodes = append(sub.Nodes, n)
			}
		}
		r := solver.Result{ExistingPlacements: cmd.Placements, NewNodeClaims: cmd.Replacements}
		placed := 0
		for _, pl := range cmd.Placements {
			placed += len(pl.Pods)
		}
		for _, nc := range cmd.Replacements {
			placed += len(nc.Pods)
			r.CostPerHour += nc.Offering.Price
		}
		if placed != len(moved) {
			t.Fatalf("command %d places %d of the %d pods of its nodes", ci, placed, len(moved))
		}
		if math.Abs(cmd.RemovedPerHour-r.CostPerHour-cmd.SavingsPerHour) > 1e-9 {
			t.Fatalf("command %d: removed %.4f - replacements %.4f != savings %.4f", ci, cmd.RemovedPerHour, r.CostPerHour, cmd.SavingsPerHour)
		}
		if err := verify.Verify(sub, r); err != nil {
			t.Fatalf("command %d fails verification:\n%v", ci, err)
		}
		for name := range deleting {
			gone[name] = true
		}
	}
	return plan
}

func isDaemon(p *corev1.Pod) bool {
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func keptReason(plan solver.ConsolidationPlan, node string) string {
	for _, k := range plan.Kept {
		if k.Node == node {
			return k.Reason
		}
	}
	return ""
}

func TestConsolidateTwoHalfEmptyNodesToOne(t *testing.T) {
	m4 := instanceType("m-4", "4", "16Gi", 0.20, onlyOnDemand)
	np := nodePool("general")
	in := solver.ConsolidationInput{Input: solver.Input{
		NodePools: []solver.NodePoolInput{poolInput(np, []*catalog.InstanceType{m4})},
		Nodes: []solver.ExistingNode{
			runningNode("a", "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(3, "a", "500m", "1Gi")...),
			runningNode("b", "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(2, "b", "500m", "1Gi")...),
		},
	}, Budgets: budgets(10, "general")}
	in.Candidates = allCandidates(in.Input)
	plan := consolidate(t, in)
	if len(plan.Commands) != 1 {
		t.Fatalf("want one command, got %s", describe(plan))
	}
	cmd := plan.Commands[0]
	if cmd.Reason != v1.DisruptionReasonUnderutilized || len(cmd.Delete) != 1 || cmd.Delete[0] != "b" || len(cmd.Replacements) != 0 {
		t.Fatalf("want node b (fewer pods) deleted, nothing launched; got %s", describe(plan))
	}
	if math.Abs(plan.CostBefore-0.40) > 1e-9 || math.Abs(plan.CostAfter-0.20) > 1e-9 {
		t.Fatalf("cost %.2f -> %.2f, want 0.40 -> 0.20", plan.CostBefore, plan.CostAfter)
	}
}

func TestConsolidateReplacesWithCheaperNode(t *testing.T) {
	types := []*catalog.InstanceType{}
	for _, it := range standardTypes() {
		onlyOnDemand(it)
		types = append(types, it)
	}
	m16 := types[4]
	in := solver.ConsolidationInput{Input: solver.Input{
		NodePools: []solver.NodePoolInput{poolInput(nodePool("general"), types)},
		Nodes:     []solver.ExistingNode{runningNode("big", "general", m16, "zone-b", v1.CapacityTypeOnDemand, pods(2, "p", "500m", "1Gi")...)},
	}, Budgets: budgets(1, "general")}
	in.Candidates = allCandidates(in.Input)
	plan := consolidate(t, in)
	if len(plan.Commands) != 1 || len(plan.Commands[0].Replacements) != 1 {
		t.Fatalf("want one replacement, got %s", describe(plan))
	}
	got := plan.Commands[0].Replacements[0].InstanceType.Name
	if got != "m-1" {
		t.Fatalf("replacement %s, want m-1 (the cheapest that holds 1 cpu + 2Gi)", got)
	}
	if math.Abs(plan.Commands[0].SavingsPerHour-(0.80-0.05)) > 1e-9 {
		t.Fatalf("savings %.3f, want 0.75", plan.Commands[0].SavingsPerHour)
	}
}

func TestConsolidateDeletesEmptyNodesFirst(t *testing.T) {
	m4 := instanceType("m-4", "4", "16Gi", 0.20, onlyOnDemand)
	in := solver.ConsolidationInput{Input: solver.Input{
		NodePools: []solver.NodePoolInput{poolInput(nodePool("general"), []*catalog.InstanceType{m4})},
		Nodes: []solver.ExistingNode{
			runningNode("empty", "general", m4, "zone-a", v1.CapacityTypeOnDemand),
			runningNode("busy", "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(6, "p", "500m", "1Gi")...),
		},
	}, Budgets: budgets(5, "general")}
	in.Candidates = allCandidates(in.Input)
	plan := consolidate(t, in)
	if len(plan.Commands) != 1 || plan.Commands[0].Reason != v1.DisruptionReasonEmpty || plan.Commands[0].Delete[0] != "empty" {
		t.Fatalf("want only the empty node deleted as Empty, got %s", describe(plan))
	}
	if keptReason(plan, "busy") != solver.KeptNoSaving {
		t.Fatalf("busy kept for %q", keptReason(plan, "busy"))
	}
}

func TestConsolidateHonoursBudgetsAndPolicy(t *testing.T) {
	m4 := instanceType("m-4", "4", "16Gi", 0.20, onlyOnDemand)
	mk := func() solver.ConsolidationInput {
		var nodes []solver.ExistingNode
		for i := range 4 {
			nodes = append(nodes, runningNode(fmt.Sprintf("n%d", i), "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(1, fmt.Sprintf("p%d", i), "500m", "1Gi")...))
		}
		in := solver.ConsolidationInput{Input: solver.Input{NodePools: []solver.NodePoolInput{poolInput(nodePool("general"), []*catalog.InstanceType{m4})}, Nodes: nodes}}
		in.Candidates = allCandidates(in.Input)
		return in
	}
	for _, tc := range []struct {
		name      string
		budget    int
		whenEmpty bool
		deleted   int
		kept      string
	}{
		{name: "budget 0 blocks", budget: 0, deleted: 0, kept: solver.KeptBudget},
		{name: "budget 1 deletes one", budget: 1, deleted: 1, kept: solver.KeptBudget},
		{name: "budget 2 deletes two", budget: 2, deleted: 2, kept: solver.KeptBudget},
		{name: "enough budget repacks 4 to 1", budget: 10, deleted: 3},
		{name: "WhenEmpty leaves busy nodes", budget: 10, whenEmpty: true, deleted: 0, kept: solver.KeptWhenEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := mk()
			in.Budgets = budgets(tc.budget, "general")
			for i := range in.Candidates {
				in.Candidates[i].EmptyOnly = tc.whenEmpty
			}
			plan := consolidate(t, in)
			deleted := 0
			for _, c := range plan.Commands {
				deleted += len(c.Delete)
			}
			if deleted != tc.deleted {
				t.Fatalf("deleted %d, want %d: %+v", deleted, tc.deleted, plan.Commands)
			}
			if tc.kept != "" && keptReason(plan, "n3") != tc.kept && keptReason(plan, "n0") != tc.kept {
				t.Fatalf("kept reasons %+v, want %q", plan.Kept, tc.kept)
			}
		})
	}
}

func TestConsolidateKeepsNodeWhosePodFitsNowhereElse(t *testing.T) {
	m4 := instanceType("m-4", "4", "16Gi", 0.20, onlyOnDemand)
	pinned := pod("pinned", "100m", "128Mi", nodeSelector(v1.LabelHostname, "special"))
	in := solver.ConsolidationInput{Input: solver.Input{
		NodePools: []solver.NodePoolInput{poolInput(nodePool("general"), []*catalog.InstanceType{m4})},
		Nodes: []solver.ExistingNode{
			runningNode("special", "general", m4, "zone-a", v1.CapacityTypeOnDemand, pinned),
			runningNode("other", "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(1, "p", "500m", "1Gi")...),
		},
	}, Budgets: budgets(10, "general")}
	in.Candidates = allCandidates(in.Input)
	plan := consolidate(t, in)
	if len(plan.Commands) != 1 || plan.Commands[0].Delete[0] != "other" {
		t.Fatalf("want only 'other' deleted, got %s", describe(plan))
	}
	if r := keptReason(plan, "special"); r != solver.KeptPodsNotPlaceable {
		t.Fatalf("special kept for %q, want %q", r, solver.KeptPodsNotPlaceable)
	}
}

func TestConsolidateSpotToSpotNeedsFifteenCheaperOptions(t *testing.T) {
	var types []*catalog.InstanceType
	for i := range 20 {
		types = append(types, instanceType(fmt.Sprintf("t-%02d", i), "2", "8Gi", 0.10+float64(i)*0.01))
	}
	big := instanceType("big", "16", "64Gi", 0.50)
	withBig := append(append([]*catalog.InstanceType(nil), types...), big)
	mk := func(its []*catalog.InstanceType) solver.ConsolidationInput {
		in := solver.ConsolidationInput{Input: solver.Input{
			NodePools: []solver.NodePoolInput{poolInput(nodePool("spot"), its)},
			Nodes:     []solver.ExistingNode{runningNode("s", "spot", big, "zone-a", v1.CapacityTypeSpot, pods(1, "p", "500m", "1Gi")...)},
		}, Budgets: budgets(1, "spot"), SpotToSpot: true}
		in.Candidates = allCandidates(in.Input)
		return in
	}
	// big spot costs 0.30; the 20 small types' spot prices 0.060–0.174 are all cheaper: replaced.
	if plan := consolidate(t, mk(withBig)); len(plan.Commands) != 1 || plan.Commands[0].Replacements[0].Offering.CapacityType != v1.CapacityTypeSpot {
		t.Fatalf("want a spot replacement with 20 cheaper options, got %s", describe(plan))
	}
	// SpotToSpot off (upstream's default): the same spot node stays.
	off := mk(withBig)
	off.SpotToSpot = false
	if plan := consolidate(t, off); len(plan.Commands) != 0 {
		t.Fatalf("want no spot-to-spot replacement with SpotToSpot off, got %s", describe(plan))
	}
	// Only 5 cheaper types: not enough options, so the spot node stays.
	few := append(append([]*catalog.InstanceType(nil), types[:5]...), big)
	for _, it := range few {
		onlyZones("zone-a")(it)
		var keep []catalog.Offering
		for _, o := range it.Offerings {
			if o.CapacityType == v1.CapacityTypeSpot {
				keep = append(keep, o)
			}
		}
		it.Offerings = keep
	}
	plan := consolidate(t, mk(few))
	if len(plan.Commands) != 0 {
		t.Fatalf("want no spot-to-spot replacement with 5 cheaper options, got %s", describe(plan))
	}
}

func TestConsolidateFullClusterIsStable(t *testing.T) {
	m4 := instanceType("m-4", "4", "16Gi", 0.20, onlyOnDemand)
	in := solver.ConsolidationInput{Input: solver.Input{NodePools: []solver.NodePoolInput{poolInput(nodePool("general"), []*catalog.InstanceType{m4})}}, Budgets: budgets(100, "general")}
	for i := range 30 {
		in.Nodes = append(in.Nodes, runningNode(fmt.Sprintf("n%02d", i), "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(8, fmt.Sprintf("p%02d", i), "500m", "2Gi")...))
	}
	in.Candidates = allCandidates(in.Input)
	if plan := consolidate(t, in); len(plan.Commands) != 0 {
		t.Fatalf("full nodes: want no command, got %s", describe(plan))
	}
}

// TestConsolidateRandomClusters checks the safety properties on random clusters: every command is
// verified, saves money, and planning again on the result finds at most 5% more to save.
func TestConsolidateRandomClusters(t *testing.T) {
	types := standardTypes()
	pool := nodePool("general", poolReq(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))
	for seed := range 20 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		in := solver.ConsolidationInput{Input: solver.Input{NodePools: []solver.NodePoolInput{poolInput(pool, types)}}, Budgets: budgets(1000, "general")}
		for i := range 5 + rng.IntN(30) {
			it := types[1+rng.IntN(len(types)-1)]
			n := rng.IntN(4)
			var ps []*corev1.Pod
			for j := range n {
				var mods []func(*corev1.Pod)
				if rng.IntN(4) == 0 {
					mods = append(mods, podAntiAffinity(v1.LabelHostname, map[string]string{"app": "anti"}), label("app", "anti"))
				}
				ps = append(ps, pod(fmt.Sprintf("p%d-%d", i, j), fmt.Sprintf("%dm", 100+rng.IntN(900)), fmt.Sprintf("%dMi", 128+rng.IntN(2048)), mods...))
			}
			in.Nodes = append(in.Nodes, runningNode(fmt.Sprintf("n%02d", i), "general", it, testZones[rng.IntN(3)], v1.CapacityTypeOnDemand, ps...))
		}
		in.Candidates = allCandidates(in.Input)
		plan := consolidate(t, in)
		if plan.CostAfter > plan.CostBefore+1e-9 {
			t.Fatalf("seed %d: cost rises %.3f -> %.3f", seed, plan.CostBefore, plan.CostAfter)
		}
		next := applyPlan(in, plan)
		if again := consolidate(t, next); len(again.Commands) > 0 && again.Commands[0].SavingsPerHour > 0.05*plan.CostAfter {
			t.Fatalf("seed %d: a second round still saves %.3f of %.3f $/h:\nfirst: %s\nsecond: %s", seed, again.Commands[0].SavingsPerHour, plan.CostAfter, describe(plan), describe(again))
		}
	}
}

// applyPlan is the cluster after every command ran: deleted nodes gone, moved pods on their new
// nodes, replacements running.
func applyPlan(in solver.ConsolidationInput, plan solver.ConsolidationPlan) solver.ConsolidationInput {
	deleted := map[string]bool{}
	extra := map[string][]*corev1.Pod{}
	out := solver.ConsolidationInput{Input: solver.Input{NodePools: in.NodePools, DaemonSets: in.DaemonSets}, Budgets: in.Budgets}
	for ci, cmd := range plan.Commands {
		for _, n := range cmd.Delete {
			deleted[n] = true
		}
		for _, pl := range cmd.Placements {
			extra[pl.Node] = append(extra[pl.Node], pl.Pods...)
		}
		for ri, r := range cmd.Replacements {
			name := fmt.Sprintf("new-%d-%d", ci, ri)
			out.Nodes = append(out.Nodes, runningNode(name, r.NodePool, r.InstanceType, r.Offering.Zone, r.Offering.CapacityType, clonePods(r.Pods)...))
		}
	}
	for _, n := range in.Nodes {
		if deleted[n.Name] {
			continue
		}
		n.Pods = append(append([]*corev1.Pod(nil), n.Pods...), clonePods(extra[n.Name])...)
		for _, p := range n.Pods {
			p.Spec.NodeName = n.Name
		}
		out.Nodes = append(out.Nodes, n)
	}
	out.Candidates = allCandidates(out.Input)
	return out
}

func clonePods(ps []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(ps))
	for i, p := range ps {
		out[i] = p.DeepCopy()
		out[i].ObjectMeta = *p.ObjectMeta.DeepCopy()
		out[i].CreationTimestamp = metav1.Time{}
	}
	return out
}

// describe prints a plan compactly for failure messages.
func describe(plan solver.ConsolidationPlan) string {
	out := fmt.Sprintf("$%.3f -> $%.3f/h", plan.CostBefore, plan.CostAfter)
	for _, c := range plan.Commands {
		out += fmt.Sprintf("\n  %s delete %v (%.3f $/h)", c.Reason, c.Delete, c.RemovedPerHour)
		for _, r := range c.Replacements {
			out += fmt.Sprintf(" + %s/%s %.3f (%d pods)", r.InstanceType.Name, r.Offering.CapacityType, r.Offering.Price, len(r.Pods))
		}
		out += fmt.Sprintf(" saves %.3f", c.SavingsPerHour)
	}
	return out
}

// MinSavingsFraction: a repack saving 4% of the removed price is churn under the default 5%, and
// allowed when the caller lowers the minimum.
func TestConsolidateMinSavingsFraction(t *testing.T) {
	m4 := instanceType("m-4", "4", "16Gi", 0.20, onlyOnDemand)
	m4b := instanceType("m-4b", "4", "16Gi", 0.192, onlyOnDemand)
	mk := func(min *float64) solver.ConsolidationInput {
		in := solver.ConsolidationInput{Input: solver.Input{
			NodePools: []solver.NodePoolInput{poolInput(nodePool("general"), []*catalog.InstanceType{m4, m4b})},
			Nodes:     []solver.ExistingNode{runningNode("n", "general", m4, "zone-a", v1.CapacityTypeOnDemand, pods(1, "p", "3", "8Gi")...)},
		}, Budgets: budgets(1, "general"), MinSavingsFraction: min}
		in.Candidates = allCandidates(in.Input)
		return in
	}
	if plan := consolidate(t, mk(nil)); len(plan.Commands) != 0 {
		t.Fatalf("a 4%% saving passed the default 5%% minimum: %s", describe(plan))
	}
	low := 0.01
	if plan := consolidate(t, mk(&low)); len(plan.Commands) != 1 {
		t.Fatalf("want the 4%% saving taken with a 1%% minimum, got %s", describe(plan))
	}
}
