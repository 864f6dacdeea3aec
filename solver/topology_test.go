package solver_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

var web = map[string]string{"app": "web"}

func zoneCounts(r solver.Result, prefix string) map[string]int {
	out := map[string]int{}
	for _, nc := range r.NewNodeClaims {
		for _, p := range nc.Pods {
			if len(p.Name) >= len(prefix) && p.Name[:len(prefix)] == prefix {
				out[nc.Offering.Zone]++
			}
		}
	}
	return out
}

func TestZoneSpread(t *testing.T) {
	r := solve(t, defaultInput(pods(6, "web", "500m", "1Gi", label("app", "web"), spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, web))...))
	mustPlaceAll(t, r)
	if got := zoneCounts(r, "web"); got["zone-a"] != 2 || got["zone-b"] != 2 || got["zone-c"] != 2 {
		t.Fatalf("zone counts %v, want 2 each", got)
	}
	// minDomains above the number of zones caps every zone at maxSkew.
	minDomains := func(c *corev1.TopologySpreadConstraint) { n := int32(5); c.MinDomains = &n }
	r = solve(t, defaultInput(pods(4, "web", "500m", "1Gi", label("app", "web"), spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, web, minDomains))...))
	if scheduledCount(r) != 3 {
		t.Fatalf("want 3 placed with minDomains 5 over 3 zones\n%s", summary(r))
	}
	wantReason(t, r, "web-3", "topology spread (topology.kubernetes.io/zone")
}

func TestZoneSpreadCountsExistingPods(t *testing.T) {
	bound := func(name string) *corev1.Pod { return pod(name, "100m", "100Mi", label("app", "web")) }
	in := defaultInput(pods(2, "web", "500m", "1Gi", label("app", "web"), spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, web))...)
	in.Nodes = []solver.ExistingNode{
		existingNode("node-a", "zone-a", "200m", "1Gi", bound("old-a1"), bound("old-a2")),
		existingNode("node-b", "zone-b", "200m", "1Gi", bound("old-b1"), bound("old-b2")),
	}
	r := solve(t, in)
	mustPlaceAll(t, r)
	if got := zoneCounts(r, "web"); got["zone-c"] != 2 {
		t.Fatalf("zone counts %v, want both new pods in zone-c", got)
	}
}

func TestScheduleAnywaySpreadIsRelaxed(t *testing.T) {
	// Every pod is pinned to zone-a, so the spread cannot hold; ScheduleAnyway lets them land.
	r := solve(t, defaultInput(pods(3, "web", "500m", "1Gi", label("app", "web"), nodeSelector(v1.LabelTopologyZone, "zone-a"),
		spread(v1.LabelHostname, 1, corev1.ScheduleAnyway, web))...))
	mustPlaceAll(t, r)
	if len(r.NewNodeClaims) != 3 {
		t.Fatalf("ScheduleAnyway hostname spread should still spread when it can\n%s", summary(r))
	}
}

func TestMatchLabelKeys(t *testing.T) {
	withKeys := func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"pod-template-hash"} }
	var ps []*corev1.Pod
	for _, rev := range []string{"r1", "r2"} {
		ps = append(ps, pods(3, "web-"+rev, "500m", "1Gi", label("app", "web"), label("pod-template-hash", rev),
			spread(v1.LabelTopologyZone, 1, corev1.DoNotSchedule, web, withKeys))...)
	}
	r := solve(t, defaultInput(ps...))
	mustPlaceAll(t, r)
	for _, rev := range []string{"r1", "r2"} {
		if got := zoneCounts(r, "web-"+rev); got["zone-a"] != 1 || got["zone-b"] != 1 || got["zone-c"] != 1 {
			t.Fatalf("revision %s zone counts %v, want one per zone", rev, got)
		}
	}
}

func TestHostnameSpread(t *testing.T) {
	r := solve(t, defaultInput(pods(4, "web", "500m", "1Gi", label("app", "web"), spread(v1.LabelHostname, 1, corev1.DoNotSchedule, web))...))
	mustPlaceAll(t, r)
	if len(r.NewNodeClaims) != 4 {
		t.Fatalf("want 4 nodes for maxSkew 1\n%s", summary(r))
	}
	r = solve(t, defaultInput(pods(4, "web", "500m", "1Gi", label("app", "web"), spread(v1.LabelHostname, 2, corev1.DoNotSchedule, web))...))
	if len(r.NewNodeClaims) != 2 {
		t.Fatalf("want 2 nodes for maxSkew 2\n%s", summary(r))
	}
	// Only one existing node and no NodePool: the second pod would break the skew.
	in := solver.Input{Pods: pods(2, "web", "500m", "1Gi", label("app", "web"), spread(v1.LabelHostname, 1, corev1.DoNotSchedule, web)),
		Nodes: []solver.ExistingNode{existingNode("node-1", "zone-a", "4", "8Gi")}}
	r = solve(t, in)
	if existingOf(r, "web-0") != "node-1" {
		t.Fatalf("web-0 should use the existing node\n%s", summary(r))
	}
	wantReason(t, r, "web-1", "topology spread (kubernetes.io/hostname")
}

func TestPodAffinityHostname(t *testing.T) {
	ps := pods(2, "web", "500m", "1Gi", label("app", "web"))
	ps = append(ps, pod("cache", "500m", "1Gi", podAffinity(v1.LabelHostname, web)))
	r := solve(t, defaultInput(ps...))
	mustPlaceAll(t, r)
	cache := nodeOf(r, "cache")
	hasWeb := false
	for _, p := range cache.Pods {
		hasWeb = hasWeb || p.Labels["app"] == "web"
	}
	if !hasWeb {
		t.Fatalf("cache is not with a web pod\n%s", summary(r))
	}
	r = solve(t, defaultInput(pod("lonely", "500m", "1Gi", podAffinity(v1.LabelHostname, map[string]string{"app": "nothing"}))))
	wantReason(t, r, "lonely", "pod affinity (kubernetes.io/hostname")
	wantReason(t, r, "lonely", "no pod matches the selector")
}

func TestPodAffinitySelfMatchingStartsAnywhere(t *testing.T) {
	r := solve(t, defaultInput(pods(3, "web", "500m", "1Gi", label("app", "web"), podAffinity(v1.LabelTopologyZone, web))...))
	mustPlaceAll(t, r)
	if got := zoneCounts(r, "web"); len(got) != 1 {
		t.Fatalf("self-affine pods should share one zone, got %v", got)
	}
}

func TestPodAffinityZoneFollowsExistingPod(t *testing.T) {
	db := pod("db-0", "100m", "100Mi", label("app", "db"))
	in := defaultInput(pod("api", "1", "1Gi", podAffinity(v1.LabelTopologyZone, map[string]string{"app": "db"})))
	in.Nodes = []solver.ExistingNode{existingNode("full", "zone-b", "100m", "100Mi", db)}
	r := solve(t, in)
	if nc := nodeOf(r, "api"); nc == nil || nc.Offering.Zone != "zone-b" {
		t.Fatalf("api should launch in zone-b next to db\n%s", summary(r))
	}
}

func TestPodAntiAffinity(t *testing.T) {
	r := solve(t, defaultInput(pods(3, "web", "500m", "1Gi", label("app", "web"), podAntiAffinity(v1.LabelHostname, web))...))
	mustPlaceAll(t, r)
	if len(r.NewNodeClaims) != 3 {
		t.Fatalf("want one node per pod\n%s", summary(r))
	}
	r = solve(t, defaultInput(pods(4, "web", "500m", "1Gi", label("app", "web"), podAntiAffinity(v1.LabelTopologyZone, web))...))
	if scheduledCount(r) != 3 {
		t.Fatalf("want 3 placed, one per zone\n%s", summary(r))
	}
	wantReason(t, r, "web-3", "pod anti-affinity (topology.kubernetes.io/zone")
}

func TestExistingPodsAntiAffinityIsSymmetric(t *testing.T) {
	guard := pod("guard", "100m", "100Mi", label("app", "guard"), podAntiAffinity(v1.LabelHostname, web))
	in := solver.Input{Pods: []*corev1.Pod{pod("web-0", "500m", "1Gi", label("app", "web"))},
		Nodes: []solver.ExistingNode{existingNode("node-1", "zone-a", "8", "16Gi", guard)}}
	wantReason(t, solve(t, in), "web-0", "anti-affinity of other pods")
	in.NodePools = []solver.NodePoolInput{poolInput(nodePool("default"), standardTypes())}
	r := solve(t, in)
	if existingOf(r, "web-0") != "" || nodeOf(r, "web-0") == nil {
		t.Fatalf("web-0 must avoid node-1\n%s", summary(r))
	}
}

func TestPreferredAntiAffinity(t *testing.T) {
	r := solve(t, defaultInput(pods(3, "web", "500m", "1Gi", label("app", "web"), preferredAntiAffinity(10, v1.LabelHostname, web))...))
	mustPlaceAll(t, r)
	if len(r.NewNodeClaims) != 3 {
		t.Fatalf("preferred anti-affinity should spread while possible\n%s", summary(r))
	}
	in := solver.Input{Pods: pods(2, "web", "500m", "1Gi", label("app", "web"), preferredAntiAffinity(10, v1.LabelHostname, web)),
		Nodes: []solver.ExistingNode{existingNode("node-1", "zone-a", "4", "8Gi")}}
	mustPlaceAll(t, solve(t, in))
}

func TestHostPorts(t *testing.T) {
	in := solver.Input{Pods: pods(2, "proxy", "100m", "100Mi", hostPortOf(8080)), Nodes: []solver.ExistingNode{existingNode("node-1", "zone-a", "4", "8Gi")}}
	r := solve(t, in)
	if scheduledCount(r) != 1 {
		t.Fatalf("two pods with host port 8080 share a node\n%s", summary(r))
	}
	wantReason(t, r, "proxy-1", "no existing node has room")
	in.NodePools = []solver.NodePoolInput{poolInput(nodePool("default"), standardTypes())}
	r = solve(t, in)
	mustPlaceAll(t, r)
	if existingOf(r, "proxy-0") == "" || nodeOf(r, "proxy-1") == nil {
		t.Fatalf("want one on the existing node and one on a new node\n%s", summary(r))
	}
	// Different ports share a node.
	r = solve(t, defaultInput(pod("a", "100m", "100Mi", hostPortOf(80)), pod("b", "100m", "100Mi", hostPortOf(443))))
	if len(r.NewNodeClaims) != 1 {
		t.Fatalf("different host ports should share a node\n%s", summary(r))
	}
}

func TestVolumeZonePinsZone(t *testing.T) {
	in := defaultInput(pod("db", "1", "1Gi", pvc("data")))
	in.VolumeZones = map[string][]string{"default/data": {"zone-c"}}
	r := solve(t, in)
	if nc := nodeOf(r, "db"); nc == nil || nc.Offering.Zone != "zone-c" {
		t.Fatalf("db should land in zone-c\n%s", summary(r))
	}
	in.VolumeZones = map[string][]string{"default/data": {"zone-x"}}
	wantReason(t, solve(t, in), "db", "zone pinned by the pod's volumes")
	in = defaultInput(pod("two", "1", "1Gi", pvc("a"), pvc("b")))
	in.VolumeZones = map[string][]string{"default/a": {"zone-a"}, "default/b": {"zone-b"}}
	wantReason(t, solve(t, in), "two", "pin zones that do not overlap")
}

func TestDiverseSmallPlanVerifies(t *testing.T) {
	for _, n := range []int{50, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := solve(t, upstreamInput(diversePods(n)))
			// Zone-affinity pods whose selector value no pod carries cannot be placed.
			for _, u := range r.Unschedulable {
				if !strings.Contains(u.Reason, "no pod matches the selector") {
					t.Fatalf("%s: %s", u.Pod.Name, u.Reason)
				}
			}
			if scheduledCount(r) < n*3/4 {
				t.Fatalf("placed only %d of %d", scheduledCount(r), n)
			}
		})
	}
}
