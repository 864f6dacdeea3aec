package snapshot

import (
	"maps"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// A snapshot hands the solver the nodes' and the launched claims' own label maps (read only) when
// they already hold what the snapshot would add; a node without a hostname label and a claim
// missing a single-valued requirement get a copy, and their own maps stay as they were.
func TestSnapshotSharesLabelMapsThatNeedNothingAdded(t *testing.T) {
	withHostname := node("n1", "a")
	withHostname.Labels[v1.LabelHostname] = "n1"
	bare := node("n2", "a")
	launched := claim("c1", "a", "")
	launched.Labels[v1.LabelTopologyZone] = "z1"
	launched.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}},
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
	}
	unlaunched := claim("c2", "a", "")
	unlaunched.Spec.Requirements = launched.Spec.Requirements
	bareBefore, unlaunchedBefore := maps.Clone(bare.Labels), maps.Clone(unlaunched.Labels)

	s, err := Build(Cluster{NodePools: []*v1.NodePool{nodePool("a")}, Nodes: []*corev1.Node{withHostname, bare},
		NodeClaims: []*v1.NodeClaim{launched, unlaunched}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	got := map[string]map[string]string{}
	for _, n := range s.Input.Nodes {
		got[n.Name] = n.Labels
	}
	if !same(got["n1"], withHostname.Labels) {
		t.Error("node n1 carries its hostname label: its labels should be its own map, not a copy")
	}
	if !same(got["c1"], launched.Labels) {
		t.Error("claim c1 holds its zone requirement as a label: its labels should be its own map, not a copy")
	}
	if same(got["n2"], bare.Labels) || got["n2"][v1.LabelHostname] != "n2" || !maps.Equal(bare.Labels, bareBefore) {
		t.Errorf("node n2 without a hostname label: labels %v, want a copy with hostname n2 and the node's own %v unchanged", got["n2"], bare.Labels)
	}
	if same(got["c2"], unlaunched.Labels) || got["c2"][v1.LabelTopologyZone] != "z1" || !maps.Equal(unlaunched.Labels, unlaunchedBefore) {
		t.Errorf("claim c2 without its zone label: labels %v, want a copy with zone z1 and the claim's own %v unchanged", got["c2"], unlaunched.Labels)
	}
	if _, ok := got["c2"][v1.LabelArch]; ok {
		t.Error("a requirement of two values is not a label")
	}
}
