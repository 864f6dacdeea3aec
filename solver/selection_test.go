package solver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

// mixedTypes: amd64 and arm64 types carrying an integer "cpu-count" label.
func mixedTypes() []*catalog.InstanceType {
	return []*catalog.InstanceType{
		instanceType("a-2", "2", "8Gi", 0.10, withLabel("cpu-count", "2")),
		instanceType("a-8", "8", "32Gi", 0.40, withLabel("cpu-count", "8")),
		instanceType("r-2", "2", "8Gi", 0.08, withLabel("cpu-count", "2"), withLabel(v1.LabelArch, "arm64")),
		instanceType("r-8", "8", "32Gi", 0.32, withLabel("cpu-count", "8"), withLabel(v1.LabelArch, "arm64")),
	}
}

func mixedInput(ps ...*corev1.Pod) solver.Input {
	return solver.Input{Pods: ps, NodePools: []solver.NodePoolInput{poolInput(nodePool("default"), mixedTypes())}}
}

func TestNodeSelectorAndAffinity(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(*corev1.Pod)
		check  func(nc *solver.NodeClaimPlan) bool
		reason string
	}{
		{name: "nodeSelector arch", mod: nodeSelector(v1.LabelArch, "amd64"),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Labels[v1.LabelArch] == "amd64" }},
		{name: "nodeSelector unknown arch", mod: nodeSelector(v1.LabelArch, "s390x"),
			reason: "no instance type in NodePool default matches kubernetes.io/arch In [s390x]"},
		{name: "In", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpIn, "8")}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Labels["cpu-count"] == "8" }},
		{name: "NotIn", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr(v1.LabelArch, corev1.NodeSelectorOpNotIn, "arm64")}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Labels[v1.LabelArch] == "amd64" }},
		{name: "Exists", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpExists)}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Name == "r-2" }},
		{name: "Exists on a missing label", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("gpu-model", corev1.NodeSelectorOpExists)}),
			reason: "gpu-model Exists"},
		{name: "DoesNotExist", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("gpu-model", corev1.NodeSelectorOpDoesNotExist)}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Name == "r-2" }},
		{name: "DoesNotExist on a present label", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpDoesNotExist)}),
			reason: "cpu-count DoesNotExist"},
		{name: "Gt", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpGt, "4")}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Name == "r-8" }},
		{name: "Gt too high", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpGt, "100")}),
			reason: "cpu-count Gt 100"},
		{name: "Lt", mod: requiredTerms([]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpLt, "4"), expr(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Name == "a-2" }},
		{name: "ORed terms: first impossible, second used", mod: requiredTerms(
			[]corev1.NodeSelectorRequirement{expr(v1.LabelArch, corev1.NodeSelectorOpIn, "s390x")},
			[]corev1.NodeSelectorRequirement{expr("cpu-count", corev1.NodeSelectorOpIn, "8"), expr(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")}),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Name == "a-8" }},
		{name: "ORed terms: none possible", mod: requiredTerms(
			[]corev1.NodeSelectorRequirement{expr(v1.LabelArch, corev1.NodeSelectorOpIn, "s390x")},
			[]corev1.NodeSelectorRequirement{expr(v1.LabelOS, corev1.NodeSelectorOpIn, "windows")}),
			reason: "no instance type in NodePool default matches"},
		{name: "instance type label", mod: nodeSelector(v1.LabelInstanceType, "a-8"),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.InstanceType.Name == "a-8" }},
		{name: "zone", mod: nodeSelector(v1.LabelTopologyZone, "zone-c"),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.Offering.Zone == "zone-c" }},
		{name: "unknown zone", mod: nodeSelector(v1.LabelTopologyZone, "zone-x"),
			reason: "topology.kubernetes.io/zone In [zone-x]"},
		{name: "capacity type on-demand", mod: nodeSelector(v1.CapacityTypeLabelKey, "on-demand"),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.Offering.CapacityType == "on-demand" }},
		{name: "nodepool label", mod: nodeSelector(v1.NodePoolLabelKey, "default"),
			check: func(nc *solver.NodeClaimPlan) bool { return nc.NodePool == "default" }},
		{name: "other nodepool", mod: nodeSelector(v1.NodePoolLabelKey, "gpu"),
			reason: "NodePool default requires karpenter.sh/nodepool In [default]; the pod requires karpenter.sh/nodepool In [gpu]"},
		{name: "hostname only on existing nodes", mod: nodeSelector(v1.LabelHostname, "node-1"),
			reason: "kubernetes.io/hostname In [node-1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := solve(t, mixedInput(pod("p", "1", "1Gi", tc.mod)))
			if tc.reason != "" {
				wantReason(t, r, "p", tc.reason)
				return
			}
			mustPlaceAll(t, r)
			if nc := nodeOf(r, "p"); !tc.check(nc) {
				t.Fatalf("unexpected placement\n%s", summary(r))
			}
		})
	}
}

func TestSpotIsCheapestByDefault(t *testing.T) {
	r := solve(t, defaultInput(pod("p", "1", "1Gi")))
	nc := nodeOf(r, "p")
	if nc.Offering.CapacityType != v1.CapacityTypeSpot || nc.Offering.Price != 0.03 {
		t.Fatalf("offering %+v, want the 0.03 spot offering", nc.Offering)
	}
}

func TestPreferredNodeAffinity(t *testing.T) {
	r := solve(t, mixedInput(pod("p", "1", "1Gi", preferred(10, expr(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")))))
	if z := nodeOf(r, "p").Offering.Zone; z != "zone-b" {
		t.Fatalf("zone %s, want preferred zone-b", z)
	}
	// An impossible preference is relaxed.
	r = solve(t, mixedInput(pod("q", "1", "1Gi", preferred(10, expr(v1.LabelArch, corev1.NodeSelectorOpIn, "s390x")))))
	mustPlaceAll(t, r)
	// Lower weights are dropped first: the heavier preference (arm64) survives the conflict.
	r = solve(t, mixedInput(pod("w", "1", "1Gi",
		preferred(1, expr("cpu-count", corev1.NodeSelectorOpIn, "8"), expr(v1.LabelArch, corev1.NodeSelectorOpIn, "s390x")),
		preferred(50, expr(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64")))))
	if a := nodeOf(r, "w").InstanceType.Labels[v1.LabelArch]; a != "amd64" {
		t.Fatalf("arch %s, want amd64 (weight 50 kept)", a)
	}
}

func TestTaintsAndTolerations(t *testing.T) {
	gpuPool := nodePool("gpu", poolTaint("gpu", "true", corev1.TaintEffectNoSchedule))
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi")}, NodePools: []solver.NodePoolInput{poolInput(gpuPool, standardTypes())}}
	wantReason(t, solve(t, in), "p", "no NodePool tolerates taint gpu=true:NoSchedule")

	in.Pods = []*corev1.Pod{pod("q", "1", "1Gi", toleration("gpu", "true", corev1.TaintEffectNoSchedule))}
	mustPlaceAll(t, solve(t, in))
	in.Pods = []*corev1.Pod{pod("e", "1", "1Gi", toleration("gpu", "", ""))}
	mustPlaceAll(t, solve(t, in))
	in.Pods = []*corev1.Pod{pod("w", "1", "1Gi", toleration("gpu", "false", corev1.TaintEffectNoSchedule))}
	wantReason(t, solve(t, in), "w", "no NodePool tolerates taint gpu=true:NoSchedule")

	// Different taints on different pools are all named.
	other := nodePool("infra", poolTaint("infra", "", corev1.TaintEffectNoExecute))
	in = solver.Input{Pods: []*corev1.Pod{pod("x", "1", "1Gi")}, NodePools: []solver.NodePoolInput{poolInput(gpuPool, standardTypes()), poolInput(other, standardTypes())}}
	reason := reasonOf(t, solve(t, in), "x")
	if !strings.Contains(reason, "gpu=true:NoSchedule") || !strings.Contains(reason, "infra:NoExecute") {
		t.Fatalf("reason %q should name both taints", reason)
	}
}

func TestStartupTaintsIgnored(t *testing.T) {
	np := nodePool("default", func(np *v1.NodePool) {
		np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "cni-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	})
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi")}, NodePools: []solver.NodePoolInput{poolInput(np, standardTypes())}}
	mustPlaceAll(t, solve(t, in))
}

func TestPreferNoScheduleTaint(t *testing.T) {
	soft := nodePool("soft", poolWeight(50), poolTaint("spot-only", "true", corev1.TaintEffectPreferNoSchedule))
	plain := nodePool("plain", poolWeight(10))
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi")}, NodePools: []solver.NodePoolInput{poolInput(soft, standardTypes()), poolInput(plain, standardTypes())}}
	if got := nodeOf(solve(t, in), "p").NodePool; got != "plain" {
		t.Fatalf("pool %s, want plain (PreferNoSchedule avoided while possible)", got)
	}
	in.NodePools = in.NodePools[:1]
	if got := nodeOf(solve(t, in), "p").NodePool; got != "soft" {
		t.Fatalf("pool %s, want soft once the preference is relaxed", got)
	}
}

func TestPoolRequirementsNarrowed(t *testing.T) {
	np := nodePool("default", poolReq(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"),
		poolReq("cpu-count", v1.NodeSelectorOpGte, "8"))
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi", nodeSelector(v1.LabelTopologyZone, "zone-b"))},
		NodePools: []solver.NodePoolInput{poolInput(np, mixedTypes())}}
	r := solve(t, in)
	nc := nodeOf(r, "p")
	if nc.Offering.Zone != "zone-b" || nc.InstanceType.Name != "r-8" {
		t.Fatalf("got %s in %s, want r-8 in zone-b\n%s", nc.InstanceType.Name, nc.Offering.Zone, summary(r))
	}
	var zoneReq *v1.NodeSelectorRequirementWithMinValues
	for i := range nc.Requirements {
		if nc.Requirements[i].Key == v1.LabelTopologyZone {
			zoneReq = &nc.Requirements[i]
		}
	}
	if zoneReq == nil || zoneReq.Operator != corev1.NodeSelectorOpIn || strings.Join(zoneReq.Values, ",") != "zone-b" {
		t.Fatalf("zone requirement %+v, want In [zone-b]", zoneReq)
	}
	in.Pods = []*corev1.Pod{pod("q", "1", "1Gi", nodeSelector(v1.LabelTopologyZone, "zone-c"))}
	wantReason(t, solve(t, in), "q", "NodePool default requires topology.kubernetes.io/zone In [zone-a,zone-b]")
	np = nodePool("default", poolReq("cpu-count", v1.NodeSelectorOpLte, "2"))
	in = solver.Input{Pods: []*corev1.Pod{pod("s", "3", "1Gi")}, NodePools: []solver.NodePoolInput{poolInput(np, mixedTypes())}}
	wantReason(t, solve(t, in), "s", "no instance type offers 3 cpu")
}

func TestTemplateLabels(t *testing.T) {
	np := nodePool("team-a", poolLabel("team", "a"))
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi", nodeSelector("team", "a"))}, NodePools: []solver.NodePoolInput{poolInput(np, standardTypes())}}
	mustPlaceAll(t, solve(t, in))
	in.Pods = []*corev1.Pod{pod("q", "1", "1Gi", nodeSelector("team", "b"))}
	wantReason(t, solve(t, in), "q", "NodePool team-a requires team In [a]; the pod requires team In [b]")
}

func TestPoolDefinedLabelNarrowed(t *testing.T) {
	np := nodePool("default", poolReq("tier", corev1.NodeSelectorOpIn, "gold", "silver"))
	in := solver.Input{Pods: []*corev1.Pod{pod("p", "1", "1Gi", nodeSelector("tier", "silver"))}, NodePools: []solver.NodePoolInput{poolInput(np, standardTypes())}}
	r := solve(t, in)
	found := false
	for _, req := range nodeOf(r, "p").Requirements {
		if req.Key == "tier" && req.Operator == corev1.NodeSelectorOpIn && strings.Join(req.Values, ",") == "silver" {
			found = true
		}
	}
	if !found {
		t.Fatalf("requirements %+v lack tier In [silver]", nodeOf(r, "p").Requirements)
	}
}
