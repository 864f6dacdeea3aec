package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

// TestSpreadOnUncountedKeyNeedsTheKey: the kube-scheduler filters out nodes without the topology
// key of a DoNotSchedule spread, so a node launched for such a pod must carry the key (capacity type
// always does; a custom key only where a template label or an instance type sets it).
func TestSpreadOnUncountedKeyNeedsTheKey(t *testing.T) {
	cases := []struct {
		name   string
		key    string
		pools  []*v1.NodePool
		placed string // pool the pod lands in; "" = unschedulable
	}{
		{"capacity type is on every node", v1.CapacityTypeLabelKey, []*v1.NodePool{nodePool("default")}, "default"},
		{"custom key set by a template label", "example.com/rack", []*v1.NodePool{nodePool("plain", poolWeight(10)), nodePool("racked", poolWeight(1), poolLabel("example.com/rack", "r1"))}, "racked"},
		{"custom key no node carries", "example.com/rack", []*v1.NodePool{nodePool("plain")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pod("p", "1", "1Gi", spread(c.key, 1, corev1.DoNotSchedule, map[string]string{"app": "a"}), label("app", "a"))
			in := solver.Input{Pods: []*corev1.Pod{p}}
			for _, np := range c.pools {
				in.NodePools = append(in.NodePools, poolInput(np, standardTypes()))
			}
			res := solver.Solve(in)
			if err := verify.Verify(in, res); err != nil {
				t.Fatal(err)
			}
			if c.placed == "" {
				if len(res.Unschedulable) != 1 || res.Unschedulable[0].Cause != solver.CauseRequirements {
					t.Fatalf("want the pod unschedulable for requirements, got %s", summary(res))
				}
				return
			}
			if len(res.NewNodeClaims) != 1 || res.NewNodeClaims[0].NodePool != c.placed {
				t.Fatalf("want one node in %s, got %s", c.placed, summary(res))
			}
		})
	}
}

// TestVolumeZonesPlaceAndRefuse: a claim pinned to zones (a bound volume's CSI zone key, or a
// WaitForFirstConsumer class's allowedTopologies, as the snapshot reports them) places the pod in
// one of those zones, and refuses it when its node selection excludes them all.
func TestVolumeZonesPlaceAndRefuse(t *testing.T) {
	placing := defaultInput(pod("p", "1", "1Gi", pvc("data")))
	placing.VolumeZones = map[string][]string{"default/data": {"zone-b"}}
	res := solver.Solve(placing)
	if err := verify.Verify(placing, res); err != nil {
		t.Fatal(err)
	}
	if len(res.NewNodeClaims) != 1 || res.NewNodeClaims[0].Offering.Zone != "zone-b" {
		t.Fatalf("want one node in zone-b, got %s", summary(res))
	}
	refusing := defaultInput(pod("p", "1", "1Gi", pvc("data"), nodeSelector(v1.LabelTopologyZone, "zone-a")))
	refusing.VolumeZones = map[string][]string{"default/data": {"zone-b"}}
	res = solver.Solve(refusing)
	if err := verify.Verify(refusing, res); err != nil {
		t.Fatal(err)
	}
	if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 1 {
		t.Fatalf("want the pod unschedulable, got %s", summary(res))
	}
}

// TestSpreadInclusionPolicies: nodeAffinityPolicy and nodeTaintsPolicy decide which zones count as
// spread domains, and so how many pods one zone may take.
func TestSpreadInclusionPolicies(t *testing.T) {
	ignore, honor := corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor
	cases := []struct {
		name     string
		pools    []*v1.NodePool
		affinity *corev1.NodeInclusionPolicy
		taints   *corev1.NodeInclusionPolicy
		placed   int
	}{
		// Pods pinned to zone-a by their node selector.
		{"affinity honored (default): only zone-a counts", []*v1.NodePool{nodePool("default")}, nil, nil, 3},
		{"affinity ignored: empty zones b and c count", []*v1.NodePool{nodePool("default")}, &ignore, nil, 1},
		// Zones b and c only through a pool whose taint the pods do not tolerate.
		{"taints ignored (default): tainted zones count", []*v1.NodePool{nodePool("default"),
			nodePool("tainted", poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule), poolReq(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"))}, &ignore, nil, 1},
		{"taints honored: tainted zones do not count", []*v1.NodePool{nodePool("default"),
			nodePool("tainted", poolTaint("dedicated", "x", corev1.TaintEffectNoSchedule), poolReq(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"))}, &ignore, &honor, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			policies := func(tsc *corev1.TopologySpreadConstraint) {
				tsc.NodeAffinityPolicy, tsc.NodeTaintsPolicy = c.affinity, c.taints
			}
			in := solver.Input{Pods: pods(3, "p", "1", "1Gi", label("app", "a"), nodeSelector(v1.LabelTopologyZone, "zone-a"),
				spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "a"}, policies))}
			if len(c.pools) == 2 {
				// The default pool reaches only zone-a; zones b and c come only from the tainted pool.
				c.pools[0] = nodePool("default", poolReq(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
			}
			for _, np := range c.pools {
				in.NodePools = append(in.NodePools, poolInput(np, standardTypes()))
			}
			res := solver.Solve(in)
			if err := verify.Verify(in, res); err != nil {
				t.Fatal(err)
			}
			if got := scheduledCount(res); got != c.placed {
				t.Fatalf("placed %d pods, want %d: %s", got, c.placed, summary(res))
			}
		})
	}
}
