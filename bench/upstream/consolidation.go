package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/disruption"
	"sigs.k8s.io/karpenter/pkg/controllers/dynamicresources/deviceallocation"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/state/virtualpods"
	"sigs.k8s.io/karpenter/pkg/test"
	"sigs.k8s.io/karpenter/pkg/utils/pdb"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/consolidatebench"
)

// consolidationOutcome is one consolidation pass on one cluster.
type consolidationOutcome struct {
	Seconds  float64
	Commands int
	Removed  int
	Launched int
	Savings  float64
	// LoadSeconds is the CPU time spent loading the cluster into upstream's state (not in Seconds).
	LoadSeconds float64
}

// runConsolidation prints Joist's whole-cluster plan next to upstream's multi-node and single-node
// consolidation passes on the same clusters (consolidatebench): 1,000 under-used nodes, 1,000 full
// ones and issue #21's round-robin cluster (1,000 nodes of 4/8/16 vCPU, 30–40 % used, 400 types).
// Times are CPU seconds (user+system of this process): the machine is shared.
func runConsolidation(nodes int, clusters, methods []string, stdout, stderr io.Writer) error {
	want := map[string]bool{}
	for _, c := range clusters {
		want[strings.TrimSpace(c)] = true
	}
	fmt.Fprintf(stderr, "clusters of %d nodes (upstream on a controller-runtime fake client, as its scheduling benchmark)\n", nodes)
	for _, tc := range []struct {
		name string
		in   solver.ConsolidationInput
	}{{"underused", consolidatebench.UnderusedN(nodes, 10)}, {"full", consolidatebench.FullN(nodes)}, {"roundrobin", consolidatebench.RoundRobinN(nodes)}} {
		if !want[tc.name] {
			continue
		}
		start := processCPU()
		plan := solver.Consolidate(tc.in)
		j := consolidationOutcome{Seconds: processCPU() - start, Commands: len(plan.Commands), Savings: plan.CostBefore - plan.CostAfter}
		for _, c := range plan.Commands {
			j.Removed += len(c.Delete)
			j.Launched += len(c.Replacements)
		}
		fmt.Fprintf(stdout, "%-10s joist      whole cluster: %7.2fs  commands %d  removed %4d  launched %3d  saves $%.2f/h of $%.2f/h\n",
			tc.name, j.Seconds, j.Commands, j.Removed, j.Launched, j.Savings, plan.CostBefore)
		for _, method := range methods {
			method = strings.TrimSpace(method)
			u, err := upstreamConsolidation(tc.in, method)
			if err != nil {
				return fmt.Errorf("%s %s: %w", tc.name, method, err)
			}
			fmt.Fprintf(stdout, "%-10s upstream   %s-node pass: %7.2fs  commands %d  removed %4d  launched %3d  saves $%.2f/h (one ComputeCommands; %.2fs loading its cluster state)\n",
				tc.name, method, u.Seconds, u.Commands, u.Removed, u.Launched, u.Savings, u.LoadSeconds)
		}
	}
	return nil
}

// upstreamConsolidation loads the cluster into upstream's cluster state (a fake kube client, as its
// scheduling benchmark) and times one ComputeCommands of its multi- or single-node consolidation.
func upstreamConsolidation(in solver.ConsolidationInput, method string) (consolidationOutcome, error) {
	load0 := processCPU()
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "disruption"), test.Options())
	u, err := convert(in.Input)
	if err != nil {
		return consolidationOutcome{}, err
	}
	cloud := fake.NewCloudProvider()
	var all []*cloudprovider.InstanceType
	for _, its := range u.instanceTypes {
		all = append(all, its...)
	}
	cloud.InstanceTypes = all
	// karpenter.sh/v1 registers itself in client-go's scheme.
	fakeKube := fakecr.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithStatusSubresource(&karpv1.NodeClaim{}, &karpv1.NodePool{}).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Node{}, "spec.providerID", func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		WithIndex(&karpv1.NodeClaim{}, "status.providerID", func(o client.Object) []string { return []string{o.(*karpv1.NodeClaim).Status.ProviderID} }).
		Build()
	kube := newIndexedPods(fakeKube)
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, kube, cloud)
	for _, np := range u.nodePools {
		// The fake provider manages only its own test NodeClass.
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.test.sh", Kind: "TestNodeClass", Name: "default"}
		// The fake client applies no CRD defaults: give an unset disruption block the API server's
		// (consolidateAfter 0s, WhenEmptyOrUnderutilized), else upstream sees consolidation disabled
		// and finds no candidates (the round-robin cluster's pool sets none).
		if np.Spec.Disruption.ConsolidateAfter.Duration == nil {
			np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("0s")
		}
		if np.Spec.Disruption.ConsolidationPolicy == "" {
			np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
		}
		if err := kube.Create(ctx, np); err != nil {
			return consolidationOutcome{}, err
		}
		np.StatusConditions().SetTrue(karpv1.ConditionTypeValidationSucceeded)
		np.StatusConditions().SetTrue(karpv1.ConditionTypeNodeClassReady)
		if err := kube.Status().Update(ctx, np); err != nil {
			return consolidationOutcome{}, err
		}
	}
	pool := u.nodePools[0]
	created := metav1.NewTime(time.Now().Add(-time.Hour))
	for _, n := range in.Nodes {
		providerID := "fake://" + n.Name
		labels := map[string]string{karpv1.NodeRegisteredLabelKey: "true", karpv1.NodeInitializedLabelKey: "true"}
		for k, v := range n.Labels {
			labels[k] = v
		}
		nc := &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, CreationTimestamp: created,
				Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: pool.Hash(), karpv1.NodePoolHashVersionAnnotationKey: karpv1.NodePoolHashVersion}},
			Spec: karpv1.NodeClaimSpec{NodeClassRef: pool.Spec.Template.Spec.NodeClassRef},
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, CreationTimestamp: created},
			Spec:       corev1.NodeSpec{ProviderID: providerID},
			Status: corev1.NodeStatus{Allocatable: n.Allocatable, Capacity: n.Allocatable,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		if err := kube.Create(ctx, nc); err != nil {
			return consolidationOutcome{}, err
		}
		nc.Status = karpv1.NodeClaimStatus{ProviderID: providerID, NodeName: n.Name, Capacity: n.Allocatable, Allocatable: n.Allocatable}
		for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeConsolidatable} {
			nc.StatusConditions().SetTrue(c)
		}
		if err := kube.Status().Update(ctx, nc); err != nil {
			return consolidationOutcome{}, err
		}
		if err := kube.Create(ctx, node); err != nil {
			return consolidationOutcome{}, err
		}
		cluster.UpdateNodeClaim(nc)
		if err := cluster.UpdateNode(ctx, node); err != nil {
			return consolidationOutcome{}, err
		}
		for _, p := range n.Pods {
			pod := p.DeepCopy()
			pod.CreationTimestamp = created
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: pod.Labels["app"], UID: "rs-" + pod.UID, Controller: ptr.To(true)}}
			if err := kube.Create(ctx, pod); err != nil {
				return consolidationOutcome{}, err
			}
			kube.add(pod)
			if err := cluster.UpdatePod(ctx, pod); err != nil {
				return consolidationOutcome{}, err
			}
		}
	}
	recorder := events.NewRecorder(&record.FakeRecorder{})
	prov := provisioning.NewProvisioner(kube, recorder, cloud, cluster, clk, deviceallocation.NewController(kube), virtualpods.NewVirtualPodCache(kube))
	queue := disruption.NewQueue(kube, recorder, cluster, clk, prov)
	c := disruption.MakeConsolidation(clk, cluster, kube, prov, cloud, recorder, queue)
	var m interface {
		ShouldDisrupt(context.Context, *disruption.Candidate) bool
		Class() string
		Reason() karpv1.DisruptionReason
		ComputeCommands(context.Context, map[string]int, ...*disruption.Candidate) ([]disruption.Command, error)
	}
	if method == "multi" {
		m = disruption.NewMultiNodeConsolidation(c)
	} else {
		m = disruption.NewSingleNodeConsolidation(c)
	}
	loaded := processCPU() - load0
	start := processCPU()
	cands, err := disruption.GetCandidates(ctx, cluster, kube, recorder, clk, cloud, m.ShouldDisrupt, m.Class(), queue)
	if err != nil {
		return consolidationOutcome{}, fmt.Errorf("candidates: %w", err)
	}
	budgets, err := disruption.BuildDisruptionBudgetMapping(ctx, cluster, clk, kube, cloud, recorder, m.Reason())
	if err != nil {
		return consolidationOutcome{}, fmt.Errorf("budgets: %w", err)
	}
	for k := range budgets {
		budgets[k] = len(in.Nodes) // as Joist's benchmark: the budget allows every node
	}
	cmds, err := m.ComputeCommands(ctx, budgets, cands...)
	if err != nil {
		return consolidationOutcome{}, fmt.Errorf("compute commands: %w", err)
	}
	o := consolidationOutcome{Seconds: processCPU() - start, Commands: len(cmds), LoadSeconds: loaded}
	its := in.NodePools[0].InstanceTypes
	for _, cmd := range cmds {
		o.Removed += len(cmd.Candidates)
		for _, cand := range cmd.Candidates {
			o.Savings += priceOf(its, cand.NodeClaim)
		}
		for _, r := range cmd.Replacements {
			o.Launched++
			if p, ok := cheapestCompatible(r.NodeClaim); ok {
				o.Savings -= p
			}
		}
	}
	if len(cands) == 0 {
		npMap, itMap, err := disruption.BuildNodePoolMap(ctx, kube, cloud)
		if err != nil {
			return o, err
		}
		limits, err := pdb.NewLimits(ctx, kube)
		if err != nil {
			return o, err
		}
		nodes := cluster.DeepCopyNodes()
		if len(nodes) > 0 {
			_, err := disruption.NewCandidate(ctx, kube, recorder, clk, nodes[0], limits, npMap, itMap, queue, m.Class())
			return o, fmt.Errorf("upstream found no candidates among %d state nodes; the first: %v", len(nodes), err)
		}
		return o, fmt.Errorf("upstream cluster state holds no nodes")
	}
	_ = v1.Group
	return o, nil
}

// priceOf is the price of a launched upstream NodeClaim's offering, from the cluster's catalog.
func priceOf(its []*catalog.InstanceType, nc *karpv1.NodeClaim) float64 {
	if nc == nil {
		return 0
	}
	for _, it := range its {
		if it.Name != nc.Labels[v1.LabelInstanceType] {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == nc.Labels[v1.LabelTopologyZone] && o.CapacityType == nc.Labels[v1.CapacityTypeLabelKey] {
				return o.Price
			}
		}
	}
	return 0
}

// processCPU is this process's user+system CPU seconds: steadier than wall time on a shared machine.
func processCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
