package solver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

const rackKey = "example.com/rack"

// rackInput: one pool whose nodes carry one of three racks (a label the pool's requirement sets).
func rackInput(ps ...*corev1.Pod) solver.Input {
	return solver.Input{Pods: ps, NodePools: []solver.NodePoolInput{
		poolInput(nodePool("racked", poolReq(rackKey, corev1.NodeSelectorOpIn, "r1", "r2", "r3")), standardTypes())}}
}

// rackOf is the rack a planned node's requirements settle on ("" if none).
func rackOf(nc *solver.NodeClaimPlan) string {
	for _, r := range nc.Requirements {
		if r.Key == rackKey && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// Required anti-affinity on a custom key (a rack) keeps the pods one per rack; the pod beyond the
// racks is refused with a reason naming the term. (Before, the term was skipped and all four pods
// shared one node, which the verifier now rejects.)
func TestAntiAffinityOnCustomKey(t *testing.T) {
	r := solve(t, rackInput(pods(4, "web", "500m", "1Gi", label("app", "web"), podAntiAffinity(rackKey, web))...))
	if scheduledCount(r) != 3 {
		t.Fatalf("want 3 pods placed, one per rack\n%s", summary(r))
	}
	racks := map[string]bool{}
	for i := range r.NewNodeClaims {
		racks[rackOf(&r.NewNodeClaims[i])] = true
	}
	if len(racks) != 3 || racks[""] {
		t.Fatalf("want the three racks used once each, got %v\n%s", racks, summary(r))
	}
	wantReason(t, r, "web-3", "pod anti-affinity (example.com/rack")
	if r.Unschedulable[0].Cause != solver.CauseTopology {
		t.Fatalf("cause %s, want Topology", r.Unschedulable[0].Cause)
	}
}

// Required affinity on a custom key follows the bound pods it selects into their rack.
func TestAffinityOnCustomKeyFollowsBoundPod(t *testing.T) {
	db := pod("db-0", "100m", "100Mi", label("app", "db"))
	in := rackInput(pods(2, "api", "1", "1Gi", podAffinity(rackKey, map[string]string{"app": "db"}))...)
	full := existingNode("full", "zone-a", "100m", "100Mi", db)
	full.Labels[rackKey] = "r2"
	in.Nodes = []solver.ExistingNode{full}
	r := solve(t, in)
	mustPlaceAll(t, r)
	for _, name := range []string{"api-0", "api-1"} {
		if nc := nodeOf(r, name); nc == nil || rackOf(nc) != "r2" {
			t.Fatalf("%s should launch in rack r2 next to db\n%s", name, summary(r))
		}
	}
	// No pod it selects anywhere: refused, naming the term.
	r = solve(t, rackInput(pod("lonely", "1", "1Gi", podAffinity(rackKey, map[string]string{"app": "nothing"}))))
	wantReason(t, r, "lonely", "pod affinity (example.com/rack")
	// Selecting only pending pods (here pinned to rack r1, which no node can offer): the pod waits
	// for them to run, with the term named, rather than following pods that may never land.
	db = pod("db-1", "100m", "100Mi", label("app", "db"), nodeSelector(rackKey, "r9"))
	r = solve(t, rackInput(db, pod("api", "1", "1Gi", podAffinity(rackKey, map[string]string{"app": "db"}))))
	wantReason(t, r, "api", "pod affinity (example.com/rack, selector \"app=db\"): no pod it selects runs")
	// Selecting only itself: all pods in one rack.
	r = solve(t, rackInput(pods(3, "web", "3", "1Gi", label("app", "web"), podAffinity(rackKey, web))...))
	mustPlaceAll(t, r)
	racks := map[string]bool{}
	for i := range r.NewNodeClaims {
		racks[rackOf(&r.NewNodeClaims[i])] = true
	}
	if len(racks) != 1 || racks[""] {
		t.Fatalf("self-affine pods should share one rack, got %v\n%s", racks, summary(r))
	}
}

// A bound pod's required anti-affinity on a custom key keeps the pending pods it selects out of its
// rack, though they carry no term themselves.
func TestBoundAntiAffinityOnCustomKeyIsSymmetric(t *testing.T) {
	guard := pod("guard", "100m", "100Mi", label("app", "guard"), podAntiAffinity(rackKey, web))
	n := existingNode("node-1", "zone-a", "8", "16Gi", guard)
	n.Labels[rackKey] = "r1"
	in := rackInput(pods(3, "web", "500m", "1Gi", label("app", "web"))...)
	in.Nodes = []solver.ExistingNode{n}
	r := solve(t, in)
	mustPlaceAll(t, r)
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		if existingOf(r, name) != "" || rackOf(nodeOf(r, name)) == "r1" {
			t.Fatalf("%s must stay out of rack r1\n%s", name, summary(r))
		}
	}
	wantNote := "keeps it out of example.com/rack=r1"
	// The note shows up when the pod cannot be placed: with no pool, only node-1 exists.
	in.NodePools = nil
	wantReason(t, solve(t, in), "web-0", wantNote)
}

// Anti-affinity on the region (a label every instance type carries) spreads the pods over the
// regions the pool offers.
func TestAntiAffinityOnRegion(t *testing.T) {
	types := func(region string) []*catalog.InstanceType {
		return []*catalog.InstanceType{
			instanceType("m-2-"+region, "2", "8Gi", 0.10, withLabel(v1.LabelTopologyRegion, region)),
			instanceType("m-4-"+region, "4", "16Gi", 0.20, withLabel(v1.LabelTopologyRegion, region)),
		}
	}
	in := solver.Input{Pods: pods(3, "web", "500m", "1Gi", label("app", "web"), podAntiAffinity(v1.LabelTopologyRegion, web)),
		NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), append(types("east"), types("west")...))}}
	r := solve(t, in)
	if scheduledCount(r) != 2 {
		t.Fatalf("want 2 pods placed, one per region\n%s", summary(r))
	}
	regions := map[string]bool{}
	for _, nc := range r.NewNodeClaims {
		regions[nc.InstanceType.Labels[v1.LabelTopologyRegion]] = true
	}
	if !regions["east"] || !regions["west"] {
		t.Fatalf("want one node per region, got %v\n%s", regions, summary(r))
	}
	wantReason(t, r, "web-2", "pod anti-affinity (topology.kubernetes.io/region")
}

func inNamespace(ns string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Namespace = ns }
}

func withNamespaceSelector(sel map[string]string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		terms := p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		terms[len(terms)-1].NamespaceSelector = &metav1.LabelSelector{MatchLabels: sel}
	}
}

// A term's namespaceSelector selects pods by their namespace's labels: an anti-affinity term
// selecting team b's namespaces keeps the pod off the node of team b's db, and one selecting team c
// (no such namespace) does not, so the pod takes the free room there. (Before, any namespaceSelector
// was read as "all namespaces" and the second pod launched a node.)
func TestNamespaceSelector(t *testing.T) {
	db := pod("db-0", "100m", "100Mi", label("app", "db"), inNamespace("team-b"))
	for _, tc := range []struct {
		team     string
		onCommon bool
	}{{"b", false}, {"c", true}} {
		p := pod("api", "500m", "1Gi", inNamespace("team-a"), podAntiAffinity(v1.LabelHostname, map[string]string{"app": "db"}),
			withNamespaceSelector(map[string]string{"team": tc.team}))
		in := defaultInput(p)
		in.Nodes = []solver.ExistingNode{existingNode("common", "zone-a", "4", "8Gi", db)}
		in.Namespaces = map[string]map[string]string{"team-a": {"team": "a"}, "team-b": {"team": "b"}}
		r := solve(t, in)
		mustPlaceAll(t, r)
		if got := existingOf(r, "api") == "common"; got != tc.onCommon {
			t.Fatalf("namespaceSelector team=%s: api on node common = %t, want %t\n%s", tc.team, got, tc.onCommon, summary(r))
		}
	}
}
