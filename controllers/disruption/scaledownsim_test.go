package disruption

import (
	"fmt"
	"math/bits"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/benchworkload"
)

// simPool is the bench's pool: c, m and r families, on-demand, 10 % budget, consolidateAfter 0s.
func simPool() *v1.NodePool {
	return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			{Key: "joist.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: benchworkload.InstanceFamilies}}}},
		Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			ConsolidateAfter: v1.MustParseNillableDuration("0s"), Budgets: []v1.Budget{{Nodes: "10%"}}}}}
}

type simPod struct {
	pod   *corev1.Pod
	moved bool // a re-creation of a pod a command evicted
}

// scaleDownSim is the bench's scale-down without the kube-scheduler: the evicted pods land where the
// command planned them (steering's aim). Commands run one after the other, each complete before the
// next is planned.
type scaleDownSim struct {
	pool    []solver.NodePoolInput
	nodes   []solver.ExistingNode
	moved   map[types.UID]bool
	fresh   map[string]bool
	marks   map[string]bool
	next    int
	log     []string
	repeats int
}

func newScaleDownSim(seed int64) (*scaleDownSim, float64) {
	np := simPool()
	pools := []solver.NodePoolInput{{NodePool: np, InstanceTypes: catalog.Default()}}
	var pods []*corev1.Pod
	for w, s := range benchworkload.Sizes {
		owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("bench-%d", w), UID: types.UID(fmt.Sprintf("rs-%d", w)), Controller: ptr.To(true)}
		for i := range s.Replicas {
			name := fmt.Sprintf("bench-%d-%d", w, i)
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
				Labels: map[string]string{"app": fmt.Sprintf("bench-%d", w)}, OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(s.CPU), corev1.ResourceMemory: resource.MustParse(s.Memory)}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
	}
	up := solver.Solve(solver.Input{Pods: pods, NodePools: pools})
	sim := &scaleDownSim{pool: pools, moved: map[types.UID]bool{}, fresh: map[string]bool{}, marks: map[string]bool{}}
	for i, nc := range up.NewNodeClaims {
		n := simulatedReplacement(pools, nc, fmt.Sprintf("n%d", i))
		n.NodeClaim = n.Name
		for _, p := range n.Pods {
			p.Spec.NodeName = n.Name
		}
		sim.nodes = append(sim.nodes, n)
	}
	// The ReplicaSet controller deletes, of each workload, pods on the nodes with the most replicas
	// of it first (ties at random).
	rng := rand.New(rand.NewSource(seed))
	var remaining []*corev1.Pod
	for w, s := range benchworkload.Sizes {
		app := fmt.Sprintf("bench-%d", w)
		for range s.Replicas - s.Replicas*3/10 {
			// LogarithmicScaleDown: the nodes in the highest log2 bucket of replicas count alike.
			best, bucket := -1, -1
			for _, i := range rng.Perm(len(sim.nodes)) {
				c := 0
				for _, p := range sim.nodes[i].Pods {
					if p.Labels["app"] == app {
						c++
					}
				}
				if c == 0 {
					continue
				}
				if b := bits.Len(uint(c)); b > bucket {
					best, bucket = i, b
				}
			}
			n := &sim.nodes[best]
			j := slices.IndexFunc(n.Pods, func(p *corev1.Pod) bool { return p.Labels["app"] == app })
			n.Pods = slices.Delete(slices.Clone(n.Pods), j, j+1)
		}
	}
	for _, n := range sim.nodes {
		remaining = append(remaining, n.Pods...)
	}
	var fromScratch []*corev1.Pod
	for _, p := range remaining {
		q := p.DeepCopy()
		q.Spec.NodeName = ""
		fromScratch = append(fromScratch, q)
	}
	return sim, solver.Solve(solver.Input{Pods: fromScratch, NodePools: pools}).CostPerHour
}

func (s *scaleDownSim) cost() float64 {
	total := 0.0
	for _, n := range s.nodes {
		if p, ok := nodePrice(n, s.pool); ok {
			total += p
		}
	}
	return total
}

func nodePrice(n solver.ExistingNode, pools []solver.NodePoolInput) (float64, bool) {
	p, ok := catalog.OfferingPrice(pools[0].InstanceTypes, n.Labels[v1.LabelInstanceType], n.Labels[v1.LabelTopologyZone], n.Labels[v1.CapacityTypeLabelKey])
	return p, ok
}

// pass is decide's consolidation path on the simulated cluster (its pure step, consolidationStep:
// emptiness, then consolidation; no drift, nothing held); it returns the command it would start,
// and whether it was the look-ahead's replace run first.
func (s *scaleDownSim) pass(minSavings float64) (solver.Command, bool, bool) {
	budget := (len(s.nodes)*10 + 99) / 100
	budgets := map[string]solver.DisruptionBudget{"general": {v1.DisruptionReasonEmpty: budget, v1.DisruptionReasonUnderutilized: budget, v1.DisruptionReasonDrifted: budget}}
	in := solver.Input{NodePools: s.pool, Nodes: markRemovalsInSnapshot(s.nodes, s.marks)}
	cin := solver.ConsolidationInput{Input: in, Budgets: budgets, MinSavingsFraction: &minSavings}
	var cands consolidationCandidates
	for _, n := range s.nodes {
		cand := solver.Candidate{Node: n.Name, DisruptionCost: float64(len(n.Pods))}
		switch {
		case s.fresh[n.Name]:
			cands.fresh = append(cands.fresh, cand)
		case slices.ContainsFunc(n.Pods, func(p *corev1.Pod) bool { return s.moved[p.UID] }):
			cands.deferred = append(cands.deferred, cand)
		default:
			cands.preferred = append(cands.preferred, cand)
		}
	}
	step := planConsolidationStep(cin, cands, nil, false)
	s.marks = step.marked
	s.log = append(s.log, fmt.Sprintf("  look-ahead %v (first %v, reorder %q) preferred %v deferred %v fresh %v", step.la.steps, step.la.first != nil, step.noReorder,
		candNames(cands.preferred), candNames(cands.deferred), candNames(cands.fresh)))
	if cmd, ok := step.emptiness(); ok {
		return cmd, false, true
	}
	ch := step.command()
	for _, n := range ch.notes {
		if n.refused != nil {
			s.log = append(s.log, fmt.Sprintf("  list %d: refused %v+%d saving %.4f < %.4f", n.list, n.refused.Delete, len(n.refused.Replacements), n.refused.SavingsPerHour, n.threshold))
		} else {
			s.log = append(s.log, fmt.Sprintf("  list %d %v: no command", n.list, n.candidates))
		}
	}
	if ch.waitForDrain {
		s.log = append(s.log, "  waits for a drain (nothing is held here)")
	}
	return ch.cmd, ch.reordered, ch.ok
}

// apply runs the command as planned: its pods re-created where it put them.
func (s *scaleDownSim) apply(cmd solver.Command) {
	gone := map[string]bool{}
	for _, n := range cmd.Delete {
		gone[n] = true
		i := slices.IndexFunc(s.nodes, func(e solver.ExistingNode) bool { return e.Name == n })
		for _, p := range s.nodes[i].Pods {
			if s.moved[p.UID] {
				s.repeats++
			}
		}
	}
	recreate := func(pods []*corev1.Pod, node string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range pods {
			q := p.DeepCopy()
			s.next++
			q.UID = types.UID(fmt.Sprintf("%s-r%d", p.Name, s.next))
			q.Spec.NodeName = node
			s.moved[q.UID] = true
			out = append(out, q)
		}
		return out
	}
	var nodes []solver.ExistingNode
	for _, n := range s.nodes {
		if gone[n.Name] {
			continue
		}
		for _, pl := range cmd.Placements {
			if pl.Node == n.Name {
				n.Pods = slices.Concat(n.Pods, recreate(pl.Pods, n.Name))
			}
		}
		nodes = append(nodes, n)
	}
	for _, r := range cmd.Replacements {
		s.next++
		name := fmt.Sprintf("r%d", s.next)
		r.Pods = recreate(r.Pods, name)
		n := simulatedReplacement(s.pool, r, name)
		s.fresh[name] = true
		nodes = append(nodes, n)
	}
	s.nodes = nodes
}

func (s *scaleDownSim) describe() string {
	var out []string
	for _, n := range s.nodes {
		p, _ := nodePrice(n, s.pool)
		out = append(out, fmt.Sprintf("%s(%s $%.3f %d pods)", n.Name, n.Labels[v1.LabelInstanceType], p, len(n.Pods)))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// The scale-down bench (1,000 → 300 pods, test/benche2e) on the planner alone, for 40 scale-downs
// (JOIST_SCALEDOWN_SIM=<n> runs n; JOIST_SCALEDOWN_SIM_V=1 logs each run's commands): decide's
// consolidation path (pass) plans each command, which then runs as planned, its pods re-created
// where it put them. Every run must end within 1.05 × the from-scratch plan, evicting no pod twice.
// Without the reorder launching every replacement of its step (reorderedCommand), 4 of the 40
// ended at 1.084 × (9 of 100): the replace run first left out a replacement sized for the pods of
// the deletes after it, those deletes found no room and the loop ended on the big node — the
// pattern of the lead's session-17 run L1 (1.529 ×).
func TestScaleDownOnThePlannerEndsNearThePlan(t *testing.T) {
	runs := 40
	if v := os.Getenv("JOIST_SCALEDOWN_SIM"); v != "" {
		if _, err := fmt.Sscan(v, &runs); err != nil {
			t.Fatal(err)
		}
	}
	verbose := os.Getenv("JOIST_SCALEDOWN_SIM_V") != ""
	misses, repeats, sum, worst := 0, 0, 0.0, 0.0
	for seed := range int64(runs) {
		sim, plan := newScaleDownSim(seed)
		start := sim.describe()
		cmds := 0
		for ; cmds < 30; cmds++ {
			cmd, reordered, ok := sim.pass(solver.DefaultMinSavingsFraction)
			if !ok {
				break
			}
			sim.log = append(sim.log, fmt.Sprintf("cmd %d: %v+%d saves %.4f reordered %t", cmds, cmd.Delete, len(cmd.Replacements), cmd.SavingsPerHour, reordered))
			sim.apply(cmd)
		}
		ratio := sim.cost() / plan
		sum += ratio
		worst = max(worst, ratio)
		repeats += sim.repeats
		if ratio > 1.05 || sim.repeats > 0 {
			misses++
			t.Errorf("scale-down %d: %d commands, %.3f × the from-scratch plan ($%.3f vs $%.3f), %d pods evicted twice", seed, cmds, ratio, sim.cost(), plan, sim.repeats)
		}
		if verbose || ratio > 1.05 {
			t.Logf("scale-down %d start: %s\n%s\n  end: %s", seed, start, strings.Join(sim.log, "\n"), sim.describe())
		}
	}
	t.Logf("%d scale-downs: %d missed, mean %.3f × the plan, worst %.3f, %d pods evicted twice", runs, misses, sum/float64(runs), worst, repeats)
}
