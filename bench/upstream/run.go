package main

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/test"

	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/benchdata"
)

// outcome is one scheduler's result on one input.
type outcome struct {
	// Seconds is the CPU time (user+system of this process) of the solve alone (setup excluded, as
	// in upstream's own benchmark): wall time on a shared machine measures the neighbours.
	Seconds float64
	// SetupSeconds is upstream's topology and scheduler construction; zero for Joist, whose Solve
	// does everything.
	SetupSeconds  float64
	Nodes         int
	Scheduled     int
	Unschedulable int
	CostPerHour   float64
	// LowerBound is Joist's LP bound; zero for upstream.
	LowerBound float64
}

func (o outcome) PodsPerSecond(pods int) float64 {
	if o.Seconds == 0 {
		return math.Inf(1)
	}
	return float64(pods) / o.Seconds
}

// runJoist solves in with Joist's solver and prices each planned node by its chosen offering,
// which Solve picks as the cheapest available offering compatible with the node's requirements.
func runJoist(in solver.Input) outcome {
	start := processCPU()
	res := solver.Solve(in)
	o := outcome{Seconds: processCPU() - start, Nodes: len(res.NewNodeClaims), LowerBound: res.LowerBoundPerHour}
	for _, nc := range res.NewNodeClaims {
		o.CostPerHour += nc.Offering.Price
		o.Scheduled += len(nc.Pods)
	}
	for _, p := range res.ExistingPlacements {
		o.Scheduled += len(p.Pods)
	}
	o.Unschedulable = len(res.Unschedulable)
	return o
}

// upstreamInput is what upstream's scheduler consumes, converted once from a solver.Input.
type upstreamInput struct {
	nodePools     []*karpv1.NodePool
	instanceTypes map[string][]*cloudprovider.InstanceType
	daemonSetPods []*corev1.Pod
	pods          []*corev1.Pod
}

func convert(in solver.Input) (upstreamInput, error) {
	u := upstreamInput{instanceTypes: map[string][]*cloudprovider.InstanceType{}}
	for _, npi := range in.NodePools {
		np, err := nodePool(npi.NodePool)
		if err != nil {
			return upstreamInput{}, err
		}
		u.nodePools = append(u.nodePools, np)
		u.instanceTypes[np.Name] = instanceTypes(npi.InstanceTypes)
	}
	u.daemonSetPods = daemonSetPods(in.DaemonSets)
	for _, p := range in.Pods {
		u.pods = append(u.pods, p.DeepCopy())
	}
	return u, nil
}

// runUpstream schedules in with upstream Karpenter's scheduler set up as its own benchmark does
// (fake kube client, empty cluster state, topology over the pods) with the given worker count.
// With fakeTypes, every NodePool gets upstream's own fake.InstanceTypes(400) instead of the
// converted ones: a cross-check, on the diverse shape, that the conversion does not change upstream's
// speed or result.
func runUpstream(in solver.Input, workers int, fakeTypes bool) (outcome, error) {
	u, err := convert(in)
	if err != nil {
		return outcome{}, err
	}
	if fakeTypes {
		for name := range u.instanceTypes {
			u.instanceTypes[name] = fake.InstanceTypes(benchdata.UpstreamInstanceTypeCount)
		}
	}
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())
	opts := []scheduling.Options{scheduling.NumConcurrentReconciles(workers)}

	setupStart := processCPU()
	cloudProvider := fake.NewCloudProvider()
	var all []*cloudprovider.InstanceType
	for _, its := range u.instanceTypes {
		all = append(all, its...)
	}
	cloudProvider.InstanceTypes = all
	kubeClient := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, kubeClient, cloudProvider)
	topology, err := scheduling.NewTopology(ctx, kubeClient, cluster, nil, u.nodePools, u.instanceTypes, u.pods, opts...)
	if err != nil {
		return outcome{}, fmt.Errorf("creating upstream topology: %w", err)
	}
	scheduler := scheduling.NewScheduler(ctx, kubeClient, u.nodePools, cluster, nil, topology, u.instanceTypes,
		u.daemonSetPods, events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil, opts...)
	setup := processCPU() - setupStart

	start := processCPU()
	results, err := scheduler.Solve(ctx, u.pods)
	seconds := processCPU() - start
	if err != nil {
		return outcome{}, fmt.Errorf("upstream solve: %w", err)
	}
	o := outcome{Seconds: seconds, SetupSeconds: setup, Nodes: len(results.NewNodeClaims), Unschedulable: len(results.PodErrors)}
	for _, nc := range results.NewNodeClaims {
		price, ok := cheapestCompatible(nc)
		if !ok {
			return outcome{}, fmt.Errorf("upstream nodeclaim with %d pods has no available compatible offering", len(nc.Pods))
		}
		o.CostPerHour += price
		o.Scheduled += len(nc.Pods)
	}
	for _, n := range results.ExistingNodes {
		o.Scheduled += len(n.Pods)
	}
	return o, nil
}

// cheapestCompatible prices an upstream NodeClaim as Joist prices its plans: the cheapest available
// offering, over all its instance-type options, compatible with the NodeClaim's requirements.
func cheapestCompatible(nc *scheduling.NodeClaim) (float64, bool) {
	best, found := math.Inf(1), false
	for _, it := range nc.InstanceTypeOptions {
		if cheapest := it.Offerings.Available().Compatible(nc.Requirements).Cheapest(); cheapest != nil && cheapest.Price < best {
			best, found = cheapest.Price, true
		}
	}
	return best, found
}
