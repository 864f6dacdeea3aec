package simulate

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/disruptionpolicy"
	"github.com/joist-dev/joist/solver"
)

// consolidationWhatIf runs the disruption controller's policy and planner (disruptionpolicy and
// solver.Consolidate) on the input's Nodes and their bound pods (a dump of a live cluster) and prints
// which nodes would go or be replaced, which object keeps each other node, and the $/h saved. The
// dump's NodeClaims (matched to Nodes by status.nodeName) bring their do-not-disrupt annotation,
// Initialized and Disrupting conditions, lastPodEventTime and expireAfter; its PodDisruptionBudgets,
// Namespaces and Guardrails are read as the controller reads them. A Node without a NodeClaim in the
// dump is taken as initialized and past consolidateAfter. Budgets are the pools' at now.
func consolidationWhatIf(in solver.Input, objs objects, settings whatIfSettings, now time.Time, w io.Writer) error {
	nodes := map[string]*corev1.Node{}
	for _, n := range objs.nodes {
		nodes[n.obj.Name] = n.obj
	}
	claimOf := map[string]*v1.NodeClaim{}
	for _, nc := range objs.nodeClaims {
		if nc.obj.Status.NodeName != "" {
			claimOf[nc.obj.Status.NodeName] = nc.obj
		}
	}
	pools := map[string]*v1.NodePool{}
	for _, np := range in.NodePools {
		pools[np.NodePool.Name] = np.NodePool
	}
	var pdbList []*policyv1.PodDisruptionBudget
	for _, b := range objs.pdbs {
		pdbList = append(pdbList, b.obj)
	}
	pdbs := disruptionpolicy.NewPDBs(pdbList)
	policyCluster := disruptionpolicy.Cluster{Displaced: append([]*corev1.Pod(nil), in.Pods...), NamespaceLabels: map[string]map[string]string{}}
	for _, ns := range objs.namespaces {
		policyCluster.NamespaceLabels[ns.obj.Name] = ns.obj.Labels
	}
	for _, g := range objs.guardrails {
		policyCluster.Guardrails = append(policyCluster.Guardrails, *g.obj)
	}
	// Pods still bound to a Node or NodeClaim being deleted are about to need a new home (the
	// snapshot leaves such nodes out).
	for _, p := range objs.pods {
		node := nodes[p.obj.Spec.NodeName]
		if node == nil {
			continue
		}
		if nc := claimOf[node.Name]; !node.DeletionTimestamp.IsZero() || (nc != nil && !nc.DeletionTimestamp.IsZero()) {
			policyCluster.Displaced = append(policyCluster.Displaced, disruptionpolicy.DisplacedFrom([]*corev1.Pod{p.obj})...)
		}
	}

	kept := map[string]string{}
	counts := map[string]disruptionpolicy.PoolCount{}
	var judged []disruptionpolicy.Node
	var verdicts []disruptionpolicy.Verdict
	for _, n := range in.Nodes {
		if n.InFlight {
			continue
		}
		pn := disruptionpolicy.Node{Node: nodes[n.Name], Claim: claimOf[n.Name], Pool: pools[n.NodePool], Pods: n.Pods}
		if pn.Node == nil {
			continue
		}
		if pn.Claim != nil {
			pn.LastPodEvent = pn.Claim.Status.LastPodEventTime.Time
		}
		v := disruptionpolicy.Judge(pn, pdbs, now)
		if pn.Pool != nil {
			c := counts[n.NodePool]
			c.Total++
			if disruptionpolicy.Disrupting(pn.Claim, pn.Node) {
				c.Disrupting++
			}
			counts[n.NodePool] = c
		}
		judged = append(judged, pn)
		verdicts = append(verdicts, v)
	}
	in = disruptionpolicy.Prepare(in, policyCluster)
	cin := solver.ConsolidationInput{Input: in, Budgets: disruptionpolicy.PoolBudgets(pools, counts, now),
		MinSavingsFraction: settings.minSavings, SpotToSpot: settings.spotToSpot}
	cin.Pods = nil
	for i, pn := range judged {
		v := verdicts[i]
		if !v.Consolidatable {
			kept[pn.Node.Name] = v.NotConsolidatable
			continue
		}
		cin.Candidates = append(cin.Candidates, disruptionpolicy.Candidate(pn, v))
	}
	start := time.Now()
	plan := solver.Consolidate(cin)
	elapsed := time.Since(start)
	for _, k := range plan.Kept {
		kept[k.Node] = k.Reason
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tREASON\tDELETE\tLAUNCH\t$/H SAVED")
	for i, c := range plan.Commands {
		var launch []string
		for _, r := range c.Replacements {
			launch = append(launch, fmt.Sprintf("%s/%s/%s", r.InstanceType.Name, r.Offering.Zone, r.Offering.CapacityType))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.4f\n", i+1, c.Reason, strings.Join(c.Delete, ","), orDash(strings.Join(launch, ",")), c.SavingsPerHour)
	}
	_ = tw.Flush()
	if len(plan.Commands) == 0 {
		fmt.Fprintln(w, "No disruption: nothing cheaper was found within the budgets.")
	}
	fmt.Fprintln(w)
	names := make([]string, 0, len(kept))
	for n := range kept {
		names = append(names, n)
	}
	sort.Strings(names)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEPT NODE\tWHY")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%s\n", n, kept[n])
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nCost:         $%.4f/h → $%.4f/h (saves $%.4f/h)\nPlan time:    %s\n",
		plan.CostBefore, plan.CostAfter, plan.CostBefore-plan.CostAfter, formatDuration(elapsed.Seconds()))
	if sr := plan.Search; sr.Sets > 0 {
		fmt.Fprintf(w, "Search:       %d candidate sets, %d solved, %d skipped (their bound could not beat the best)\n", sr.Sets, sr.Solved, sr.Skipped)
	}
	return nil
}

// whatIfSettings are the manager's consolidation settings the what-if applies.
type whatIfSettings struct {
	minSavings *float64
	spotToSpot bool
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
