package reliability

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
)

// consolidationView is what a consolidation trial watches: the NodeClaims with their prices, the
// pods, and what the disruption loop has marked.
type consolidationView struct {
	// claims are the NodeClaims not being deleted, with their $/h.
	claims map[string]float64
	cost   float64
	// deleting counts NodeClaims being deleted; uninitialized, live claims not Initialized yet.
	deleting, uninitialized int
	// tainted are live nodes carrying karpenter.sh/disrupted; disrupting, live claims with
	// Disrupting=True.
	tainted, disrupting []string
	// running counts pods Running on a node and not being deleted; pending, pods with no node.
	running, pending int
}

func (v consolidationView) String() string {
	return fmt.Sprintf("%d claims $%.3f/h, %d deleting, %d uninitialized, %d tainted, %d disrupting, %d running, %d pending",
		len(v.claims), v.cost, v.deleting, v.uninitialized, len(v.tainted), len(v.disrupting), v.running, v.pending)
}

// key changes whenever a NodeClaim comes or goes, a pod changes state or a node is (un)tainted.
func (v consolidationView) key() string {
	names := make([]string, 0, len(v.claims))
	for n := range v.claims {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf("%d/%d/%d/%d/%d/%s", v.running, v.pending, v.deleting, len(v.tainted), len(v.disrupting), strings.Join(names, ","))
}

// inFlight reports whether a disruption command (or its drain) is visibly under way.
func (v consolidationView) inFlight() bool {
	return len(v.tainted) > 0 || len(v.disrupting) > 0 || v.deleting > 0
}

func (s *stack) viewConsolidation(ctx context.Context) (consolidationView, error) {
	v := consolidationView{claims: map[string]float64{}}
	claims, nodes, pods, err := s.listClaimsNodesPods(ctx)
	if err != nil {
		return v, err
	}
	its := catalog.Default()
	for _, nc := range claims.Items {
		if !nc.DeletionTimestamp.IsZero() {
			v.deleting++
			continue
		}
		p, _ := catalog.OfferingPrice(its, nc.Labels[v1.LabelInstanceType], nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey])
		v.claims[nc.Name] = p
		v.cost += p
		if !nc.IsTrue(v1.ConditionTypeInitialized) {
			v.uninitialized++
		}
		if nc.IsTrue(v1.ConditionTypeDisrupting) {
			v.disrupting = append(v.disrupting, nc.Name)
		}
	}
	for _, n := range nodes.Items {
		if !n.DeletionTimestamp.IsZero() {
			continue
		}
		for _, t := range n.Spec.Taints {
			if t.MatchTaint(&v1.DisruptedNoScheduleTaint) {
				v.tainted = append(v.tainted, n.Name)
			}
		}
	}
	for _, p := range pods.Items {
		if p.Namespace != "default" || !p.DeletionTimestamp.IsZero() {
			continue
		}
		switch {
		case p.Spec.NodeName == "":
			v.pending++
		case p.Status.Phase == corev1.PodRunning:
			v.running++
		}
	}
	return v, nil
}

// consolidating gives the NodePool the consolidation policy of a cost-minded team: replace or
// remove underutilized nodes after consolidateAfter, half the pool at a time. Instances are capped
// at 16 cpu, so the cluster has many nodes to delete and replace by smaller ones.
func (s *stack) consolidating(ctx context.Context, consolidateAfter string) *v1.NodePool {
	s.t.Helper()
	np := &v1.NodePool{}
	if err := s.kube.Get(ctx, client.ObjectKey{Name: "general"}, np); err != nil {
		s.t.Fatal(err)
	}
	stored := np.DeepCopy()
	capped := v1.NodeSelectorRequirementWithMinValues{Key: catalog.LabelInstanceCPU, Operator: corev1.NodeSelectorOpLt, Values: []string{"17"}}
	if !slices.ContainsFunc(np.Spec.Template.Spec.Requirements, func(r v1.NodeSelectorRequirementWithMinValues) bool { return r.Key == capped.Key }) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, capped)
	}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration(consolidateAfter),
		Budgets:             []v1.Budget{{Nodes: "50%"}},
	}
	if err := s.kube.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		s.t.Fatalf("setting the pool's disruption: %v", err)
	}
	return np
}

// scaleTo sets every Deployment to percent of its replicas and returns them as scaled.
func (s *stack) scaleTo(ctx context.Context, deploys []*appsv1.Deployment, percent int32) []*appsv1.Deployment {
	s.t.Helper()
	var out []*appsv1.Deployment
	for _, d := range deploys {
		got := &appsv1.Deployment{}
		if err := s.kube.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			s.t.Fatal(err)
		}
		stored := got.DeepCopy()
		got.Spec.Replicas = ptr.To(*d.Spec.Replicas * percent / 100)
		if err := s.kube.Patch(ctx, got, client.MergeFrom(stored)); err != nil {
			s.t.Fatalf("scaling %s: %v", d.Name, err)
		}
		out = append(out, got)
	}
	return out
}

// planFromScratch is the solver's plan for the Deployments' pods on an empty cluster: the
// consolidated state the cluster should approach.
func planFromScratch(t interface{ Fatal(...any) }, np *v1.NodePool, deploys []*appsv1.Deployment) solver.Result {
	pods, err := snapshot.ExpandAll(deploys)
	if err != nil {
		t.Fatal(err)
	}
	return solver.Solve(solver.Input{Pods: pods, NodePools: []solver.NodePoolInput{{NodePool: np, InstanceTypes: catalog.Default()}}})
}

// describeClaims lists the live NodeClaims as the planner sees them — instance type, zone,
// capacity type, $/h, node, taints — and the default namespace's pods on each node (name and
// requests), for reading a trial that stopped short of its plan.
func (s *stack) describeClaims(ctx context.Context) string {
	claims, nodes, pods, err := s.listClaimsNodesPods(ctx)
	if err != nil {
		return err.Error()
	}
	taints := map[string][]string{}
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			taints[n.Name] = append(taints[n.Name], t.Key+":"+string(t.Effect))
		}
	}
	onNode := map[string][]string{}
	for _, p := range pods.Items {
		if p.Namespace != "default" || p.Spec.NodeName == "" {
			continue
		}
		req := p.Spec.Containers[0].Resources.Requests
		ready := ""
		if !podReady(&p) {
			ready = ",NotReady"
		}
		onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], fmt.Sprintf("%s(%s,%s%s)", p.Name, req.Cpu(), req.Memory(), ready))
	}
	its := catalog.Default()
	var b strings.Builder
	for _, nc := range claims.Items {
		l := nc.Labels
		p, _ := catalog.OfferingPrice(its, l[v1.LabelInstanceType], l[v1.LabelTopologyZone], l[v1.CapacityTypeLabelKey])
		pods := onNode[nc.Status.NodeName]
		sort.Strings(pods)
		fmt.Fprintf(&b, "\n  %s node %s: %s %s %s $%.4f/h deleting=%t taints=%v pods=%v", nc.Name, nc.Status.NodeName,
			l[v1.LabelInstanceType], l[v1.LabelTopologyZone], l[v1.CapacityTypeLabelKey], p, !nc.DeletionTimestamp.IsZero(), taints[nc.Status.NodeName], pods)
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := s.kube.List(ctx, &pdbs, client.InNamespace("default")); err != nil {
		return b.String() + "\n  " + err.Error()
	}
	for _, pdb := range pdbs.Items {
		fmt.Fprintf(&b, "\n  PDB %s: %d of %d pods healthy, %d disruptions allowed", pdb.Name, pdb.Status.CurrentHealthy, pdb.Status.ExpectedPods, pdb.Status.DisruptionsAllowed)
	}
	return b.String()
}

// listClaimsNodesPods lists every NodeClaim, Node and Pod.
func (s *stack) listClaimsNodesPods(ctx context.Context) (v1.NodeClaimList, corev1.NodeList, corev1.PodList, error) {
	var (
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
	)
	for _, l := range []client.ObjectList{&claims, &nodes, &pods} {
		if err := s.kube.List(ctx, l); err != nil {
			return claims, nodes, pods, err
		}
	}
	return claims, nodes, pods, nil
}
