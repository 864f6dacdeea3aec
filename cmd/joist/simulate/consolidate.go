package simulate

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/controllers/disruption"
	"github.com/joist-dev/joist/policy"
	"github.com/joist-dev/joist/solver"
)

// consolidationWhatIf runs the disruption controller's planner on the input's Nodes and their bound
// pods (a dump of a live cluster) and prints which nodes would go or be replaced, why each other
// node stays, and the $/h saved. Every Joist node (label karpenter.sh/nodepool) is taken as past
// consolidateAfter; budgets are the pools' as they stand at now, with no node being disrupted.
func consolidationWhatIf(in solver.Input, objs objects, now time.Time, w io.Writer) error {
	nodes := map[string]*corev1.Node{}
	for _, n := range objs.nodes {
		nodes[n.obj.Name] = n.obj
	}
	pools := map[string]*v1.NodePool{}
	for _, np := range in.NodePools {
		pools[np.NodePool.Name] = np.NodePool
	}
	cin := solver.ConsolidationInput{Input: in, Budgets: map[string]solver.DisruptionBudget{}}
	cin.Pods = nil
	kept := map[string]string{}
	total := map[string]int{}
	for _, n := range in.Nodes {
		total[n.NodePool]++
	}
	for name, np := range pools {
		b := solver.DisruptionBudget{}
		for _, r := range []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonUnderutilized, v1.DisruptionReasonDrifted} {
			b[r] = disruption.AllowedDisruptions(np, r, total[name], 0, now)
		}
		cin.Budgets[name] = b
	}
	for _, n := range in.Nodes {
		np := pools[n.NodePool]
		if np == nil {
			kept[n.Name] = "not a node of a NodePool in the input"
			continue
		}
		if why := whatIfProtection(nodes[n.Name], n.Pods, now); why != "" {
			kept[n.Name] = why
			continue
		}
		if np.Spec.Disruption.ConsolidateAfter.Never {
			kept[n.Name] = fmt.Sprintf("NodePool %s has consolidateAfter: Never", np.Name)
			continue
		}
		cin.Candidates = append(cin.Candidates, solver.Candidate{Node: n.Name, DisruptionCost: float64(len(n.Pods)),
			EmptyOnly: np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty})
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
	return nil
}

// whatIfProtection reads do-not-disrupt on the node and its pods with the controller's parser.
func whatIfProtection(node *corev1.Node, pods []*corev1.Pod, now time.Time) string {
	if node != nil {
		if v, ok := node.Annotations[v1.DoNotDisruptAnnotationKey]; ok {
			if p, _, _ := policy.DoNotDisruptUntil(v, node.CreationTimestamp.Time, now); p {
				return fmt.Sprintf("node has %s", v1.DoNotDisruptAnnotationKey)
			}
		}
	}
	for _, pod := range pods {
		if v, ok := pod.Annotations[v1.DoNotDisruptAnnotationKey]; ok {
			if p, _, _ := policy.DoNotDisruptUntil(v, pod.CreationTimestamp.Time, now); p {
				return fmt.Sprintf("pod %s/%s has %s", pod.Namespace, pod.Name, v1.DoNotDisruptAnnotationKey)
			}
		}
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
