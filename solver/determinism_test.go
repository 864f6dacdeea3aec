package solver_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// determinismInput mixes constraint kinds, pools, existing nodes and daemonsets.
func determinismInput() solver.Input {
	ps := diversePods(300)
	ps = append(ps, pods(20, "arm", "700m", "2Gi", nodeSelector(v1.LabelArch, "arm64"))...)
	ps = append(ps, pods(10, "gpu", "1", "1Gi", toleration("gpu", "true", corev1.TaintEffectNoSchedule), extraRequest("nvidia.com/gpu", "1"))...)
	ps = append(ps, pods(6, "pref", "300m", "1Gi", preferred(5, expr(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")))...)
	gpu := nodePool("gpu", poolWeight(20), poolTaint("gpu", "true", corev1.TaintEffectNoSchedule))
	return solver.Input{
		Pods: ps,
		NodePools: []solver.NodePoolInput{
			poolInput(nodePool("general"), append(mixedTypes(), upstreamTypes(40)...)),
			poolInput(gpu, []*catalog.InstanceType{instanceType("g-1", "8", "32Gi", 2.0, withCapacity("nvidia.com/gpu", "1"))}),
		},
		Nodes:      []solver.ExistingNode{existingNode("node-1", "zone-a", "4", "8Gi"), existingNode("node-2", "zone-b", "2", "4Gi")},
		DaemonSets: []*appsv1.DaemonSet{daemonSet("agent", "100m", "128Mi")},
	}
}

// fingerprint renders everything observable about a plan.
func fingerprint(t *testing.T, r solver.Result) string {
	type node struct {
		Pool, Type, Zone, CT string
		Price                float64
		Options              []string
		Reqs                 []v1.NodeSelectorRequirementWithMinValues
		Pods                 []string
	}
	var out struct {
		Nodes    []node
		Existing map[string][]string
		Unsched  map[string]string
		Cost, LB float64
	}
	out.Existing, out.Unsched = map[string][]string{}, map[string]string{}
	for _, nc := range r.NewNodeClaims {
		n := node{Pool: nc.NodePool, Type: nc.InstanceType.Name, Zone: nc.Offering.Zone, CT: nc.Offering.CapacityType, Price: nc.Offering.Price, Reqs: nc.Requirements}
		for _, it := range nc.InstanceTypeOptions {
			n.Options = append(n.Options, it.Name)
		}
		for _, p := range nc.Pods {
			n.Pods = append(n.Pods, p.Name)
		}
		out.Nodes = append(out.Nodes, n)
	}
	for _, ep := range r.ExistingPlacements {
		for _, p := range ep.Pods {
			out.Existing[ep.Node] = append(out.Existing[ep.Node], p.Name)
		}
	}
	for _, u := range r.Unschedulable {
		out.Unsched[u.Pod.Name] = u.Reason
	}
	out.Cost, out.LB = r.CostPerHour, r.LowerBoundPerHour
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func shuffled(in solver.Input, seed int64) solver.Input {
	r := rand.New(rand.NewSource(seed))
	out := in
	out.Pods = append([]*corev1.Pod(nil), in.Pods...)
	r.Shuffle(len(out.Pods), func(i, j int) { out.Pods[i], out.Pods[j] = out.Pods[j], out.Pods[i] })
	out.NodePools = append([]solver.NodePoolInput(nil), in.NodePools...)
	r.Shuffle(len(out.NodePools), func(i, j int) { out.NodePools[i], out.NodePools[j] = out.NodePools[j], out.NodePools[i] })
	for i := range out.NodePools {
		types := append([]*catalog.InstanceType(nil), out.NodePools[i].InstanceTypes...)
		r.Shuffle(len(types), func(a, b int) { types[a], types[b] = types[b], types[a] })
		out.NodePools[i].InstanceTypes = types
	}
	out.Nodes = append([]solver.ExistingNode(nil), in.Nodes...)
	r.Shuffle(len(out.Nodes), func(i, j int) { out.Nodes[i], out.Nodes[j] = out.Nodes[j], out.Nodes[i] })
	return out
}

func TestDeterministic(t *testing.T) {
	in := determinismInput()
	first := solve(t, in)
	want := fingerprint(t, first)
	if again := fingerprint(t, solve(t, in)); again != want {
		t.Fatal("same input, different plan")
	}
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("shuffle-", seed), func(t *testing.T) {
			r := solve(t, shuffled(in, seed))
			if r.CostPerHour != first.CostPerHour || len(r.NewNodeClaims) != len(first.NewNodeClaims) {
				t.Fatalf("shuffled input: cost %.4f nodes %d, want %.4f and %d", r.CostPerHour, len(r.NewNodeClaims), first.CostPerHour, len(first.NewNodeClaims))
			}
			if got := fingerprint(t, r); got != want {
				t.Fatal("shuffled input gave a different plan")
			}
		})
	}
}
