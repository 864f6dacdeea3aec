package solver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

// TestVolumeAttachLimits: an existing node that attaches at most two EBS volumes and already has
// one takes a pod sharing that volume and one pod with a new volume; the pod with a second new
// volume goes to a new node (placing and refusing case), a pod whose volume another driver attaches
// is not held back, and verify rejects the node with three volumes.
func TestVolumeAttachLimits(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	existing := solver.ExistingNode{
		Name: "n1", Labels: map[string]string{v1.LabelTopologyZone: "zone-a", v1.LabelArch: "amd64", v1.LabelOS: "linux"},
		Allocatable:  rl("cpu", "16", "memory", "64Gi", "pods", "110"),
		Pods:         []*corev1.Pod{bound(pod("old", "1", "1Gi", pvc("old")), "n1")},
		VolumeLimits: map[string]int{ebs: 2},
	}
	in := defaultInput(
		pod("shares", "1", "1Gi", pvc("old")),
		pod("a", "1", "1Gi", pvc("a")),
		pod("b", "1", "1Gi", pvc("b")),
		pod("nfs", "1", "1Gi", pvc("share")),
	)
	in.Nodes = []solver.ExistingNode{existing}
	in.VolumeDrivers = map[string]string{"default/old": ebs, "default/a": ebs, "default/b": ebs, "default/share": "nfs.csi.k8s.io"}
	res := solver.Solve(in)
	if err := verify.Verify(in, res); err != nil {
		t.Fatal(err)
	}
	onExisting := map[string]bool{}
	for _, ep := range res.ExistingPlacements {
		for _, p := range ep.Pods {
			onExisting[p.Name] = true
		}
	}
	if !onExisting["shares"] || !onExisting["nfs"] || onExisting["a"] == onExisting["b"] {
		t.Fatalf("want shares, nfs and one of a/b on n1, got %v\n%s", onExisting, summary(res))
	}
	if len(res.NewNodeClaims) != 1 || len(res.NewNodeClaims[0].Pods) != 1 {
		t.Fatalf("want one new node for the pod over the attach limit, got %s", summary(res))
	}

	// The verifier holds the limit on its own: both new volumes on n1 is three.
	over := res
	over.NewNodeClaims = nil
	over.ExistingPlacements = []solver.ExistingPlacement{{Node: "n1", Pods: in.Pods}}
	err := verify.Verify(in, over)
	if err == nil || !strings.Contains(err.Error(), "above its limit of 2") {
		t.Fatalf("verify accepted three %s volumes on a node limited to two: %v", ebs, err)
	}

	// Without a limit everything fits on n1.
	in.Nodes[0].VolumeLimits = nil
	if res := solver.Solve(in); len(res.NewNodeClaims) != 0 {
		t.Fatalf("without an attach limit want no new node, got %s", summary(res))
	}
}

func bound(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.NodeName = node
	return p
}
