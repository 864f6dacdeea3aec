package solver_test

import (
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// podsPerValue counts, per value of key on the planned node (capacity type from the offering,
// other keys from the plan's single-valued In requirement), the placed pods named prefix-*.
func podsPerValue(r solver.Result, key, prefix string) map[string]int {
	out := map[string]int{}
	for _, nc := range r.NewNodeClaims {
		val := ""
		if key == v1.CapacityTypeLabelKey {
			val = nc.Offering.CapacityType
		} else {
			for _, req := range nc.Requirements {
				if req.Key == key && req.Operator == corev1.NodeSelectorOpIn && len(req.Values) == 1 {
					val = req.Values[0]
				}
			}
		}
		for _, p := range nc.Pods {
			if strings.HasPrefix(p.Name, prefix+"-") {
				out[val]++
			}
		}
	}
	return out
}

func webSpread(key string, maxSkew int32) func(*corev1.Pod) {
	return spread(key, maxSkew, corev1.DoNotSchedule, map[string]string{"app": "web"})
}

// A capacity-type spread is balanced across spot and on-demand as the kube-scheduler admits the
// pods one by one, cheapest domain (spot) first where the skew allows; maxSkew is honoured, not
// rounded down to an even split.
func TestCapacityTypeSpreadBalances(t *testing.T) {
	cases := []struct {
		n, maxSkew        int32
		wantSpot, wantOnD int
	}{
		{6, 1, 3, 3},
		{5, 1, 3, 2},
		{4, 2, 3, 1},
	}
	for _, tc := range cases {
		in := defaultInput(pods(int(tc.n), "web", "500m", "1Gi", label("app", "web"), webSpread(v1.CapacityTypeLabelKey, tc.maxSkew))...)
		r := solve(t, in)
		mustPlaceAll(t, r)
		got := podsPerValue(r, v1.CapacityTypeLabelKey, "web")
		if got[v1.CapacityTypeSpot] != tc.wantSpot || got[v1.CapacityTypeOnDemand] != tc.wantOnD {
			t.Errorf("%d pods, maxSkew %d: %v, want spot %d on-demand %d\n%s", tc.n, tc.maxSkew, got, tc.wantSpot, tc.wantOnD, summary(r))
		}
	}
}

// Pods already bound count: two web pods on a spot node send the next two to on-demand.
func TestCapacityTypeSpreadCountsBoundPods(t *testing.T) {
	full := existingNode("spot-1", "zone-a", "1", "2Gi", pod("old-0", "500m", "1Gi", label("app", "web")), pod("old-1", "500m", "1Gi", label("app", "web")))
	full.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeSpot
	in := defaultInput(pods(2, "web", "500m", "1Gi", label("app", "web"), webSpread(v1.CapacityTypeLabelKey, 1))...)
	in.Nodes = []solver.ExistingNode{full}
	r := solve(t, in)
	mustPlaceAll(t, r)
	if got := podsPerValue(r, v1.CapacityTypeLabelKey, "web"); got[v1.CapacityTypeOnDemand] != 2 {
		t.Fatalf("got %v, want both new pods on on-demand\n%s", got, summary(r))
	}
}

// The refusing case: an on-demand node that is full still counts as an empty domain, the pool
// launches only spot, and the spot domain already holds one pod more than it: the pod may only go
// to on-demand, which nothing can supply, so it stays pending with a reason naming the key.
func TestCapacityTypeSpreadRefuses(t *testing.T) {
	onD := existingNode("od-1", "zone-a", "100m", "128Mi")
	onD.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeOnDemand
	spot := existingNode("spot-1", "zone-a", "500m", "1Gi", pod("old-0", "500m", "1Gi", label("app", "web")))
	spot.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeSpot
	in := defaultInput(pod("web-0", "500m", "1Gi", label("app", "web"), webSpread(v1.CapacityTypeLabelKey, 1)))
	in.NodePools[0].NodePool.Spec.Template.Spec.Requirements = append(in.NodePools[0].NodePool.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot}})
	in.Nodes = []solver.ExistingNode{onD, spot}
	r := solve(t, in)
	if len(r.NewNodeClaims) != 0 || len(r.Unschedulable) != 1 {
		t.Fatalf("want the pod refused, got\n%s", summary(r))
	}
	wantReason(t, r, "web-0", v1.CapacityTypeLabelKey)
	wantReason(t, r, "web-0", "topology spread on karpenter.sh/capacity-type (maxSkew=1) dealt it to karpenter.sh/capacity-type=on-demand")

	// With the spot pod gone the same pod goes to spot.
	spot.Pods = nil
	in.Nodes = []solver.ExistingNode{onD, spot}
	r = solve(t, in)
	mustPlaceAll(t, r)
}

// A custom key only the NodePool defines (three racks) is balanced, and the plan pins each node
// to its rack; the result does not depend on the pods' order.
func TestCustomKeySpreadBalances(t *testing.T) {
	const rack = "example.com/rack"
	build := func() solver.Input {
		np := nodePool("default", poolReq(rack, corev1.NodeSelectorOpIn, "r1", "r2", "r3"))
		return solver.Input{Pods: pods(7, "web", "500m", "1Gi", label("app", "web"), webSpread(rack, 1)),
			NodePools: []solver.NodePoolInput{poolInput(np, standardTypes())}}
	}
	r := solve(t, build())
	mustPlaceAll(t, r)
	got := podsPerValue(r, rack, "web")
	for _, d := range []string{"r1", "r2", "r3"} {
		if got[d] < 2 || got[d] > 3 {
			t.Fatalf("rack %s has %d pods, want 2–3: %v\n%s", d, got[d], got, summary(r))
		}
	}
	in := build()
	rand.New(rand.NewSource(3)).Shuffle(len(in.Pods), func(i, j int) { in.Pods[i], in.Pods[j] = in.Pods[j], in.Pods[i] })
	if again := podsPerValue(solve(t, in), rack, "web"); len(again) != len(got) || again["r1"] != got["r1"] || again["r2"] != got["r2"] {
		t.Fatalf("shuffled input: %v, want %v", again, got)
	}
}

// A custom key carried by the instance types (two families) is balanced over the families.
func TestTypeLabelSpreadBalances(t *testing.T) {
	const fam = "example.com/family"
	types := []*catalog.InstanceType{
		instanceType("a-2", "2", "8Gi", 0.10, withLabel(fam, "a")),
		instanceType("a-4", "4", "16Gi", 0.20, withLabel(fam, "a")),
		instanceType("b-2", "2", "8Gi", 0.12, withLabel(fam, "b")),
		instanceType("b-4", "4", "16Gi", 0.24, withLabel(fam, "b")),
	}
	in := solver.Input{Pods: pods(4, "web", "500m", "1Gi", label("app", "web"), webSpread(fam, 1)),
		NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), types)}}
	r := solve(t, in)
	mustPlaceAll(t, r)
	perFam := map[string]int{}
	for _, nc := range r.NewNodeClaims {
		perFam[nc.InstanceType.Labels[fam]] += len(nc.Pods)
	}
	if perFam["a"] != 2 || perFam["b"] != 2 {
		t.Fatalf("per family %v, want 2 and 2\n%s", perFam, summary(r))
	}
}
