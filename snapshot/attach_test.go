package snapshot

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/solver/verify"
)

func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}

func claimOf(name, class, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume}}
}

// TestVolumeAttachLimits: a node whose CSINode attaches one EBS volume and already holds one (a
// bound CSI volume) takes no pod with a new EBS claim (a WaitForFirstConsumer claim of an EBS
// StorageClass), which goes to a new node; the node's legacy attachable-volumes-* resource is read
// when the CSINode says nothing, and a claim of another driver is not held back.
func TestVolumeAttachLimits(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	n1 := node("n1", "a")
	n1.Status.Allocatable["attachable-volumes-csi-efs.csi.aws.com"] = resource.MustParse("0")
	n1.Status.Allocatable["attachable-volumes-aws-ebs"] = resource.MustParse("39") // CSINode wins
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: ebs, NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)}}}}}
	old := withClaim(pendingPod("old"), "old")
	old.Spec.NodeName = "n1"
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-old"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ebs, VolumeHandle: "vol-1"}}}}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	c := Cluster{
		NodePools:  []*v1.NodePool{nodePool("a")},
		Nodes:      []*corev1.Node{n1},
		NodeClaims: []*v1.NodeClaim{claim("a-1", "a", "n1")},
		CSINodes:   []*storagev1.CSINode{csiNode},
		StorageClasses: []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: ebs, VolumeBindingMode: &wffc},
			{ObjectMeta: metav1.ObjectMeta{Name: "nfs"}, Provisioner: "nfs.csi.k8s.io", VolumeBindingMode: &wffc},
		},
		PersistentVolumes:      []*corev1.PersistentVolume{pv},
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claimOf("old", "gp3", "pv-old"), claimOf("new", "gp3", ""), claimOf("shared", "nfs", "")},
		Pods:                   []*corev1.Pod{old, withClaim(pendingPod("ebs"), "new"), withClaim(pendingPod("nfs"), "shared")},
	}
	s, err := Build(c, opts())
	if err != nil {
		t.Fatal(err)
	}
	wantLimits := map[string]int{ebs: 1, "efs.csi.aws.com": 0}
	if got := s.Input.Nodes[0].VolumeLimits; len(got) != len(wantLimits) || got[ebs] != 1 || got["efs.csi.aws.com"] != 0 {
		t.Errorf("n1 volume limits = %v, want %v", got, wantLimits)
	}
	wantDrivers := map[string]string{"default/old": ebs, "default/new": ebs, "default/shared": "nfs.csi.k8s.io"}
	for k, w := range wantDrivers {
		if g := s.Input.VolumeDrivers[k]; g != w {
			t.Errorf("driver of %s = %q, want %q", k, g, w)
		}
	}
	res := solver.Solve(s.Input)
	if err := verify.Verify(s.Input, res); err != nil {
		t.Fatal(err)
	}
	if len(res.ExistingPlacements) != 1 || len(res.ExistingPlacements[0].Pods) != 1 || res.ExistingPlacements[0].Pods[0].Name != "nfs" {
		t.Errorf("want only the nfs pod on n1, got %+v", res.ExistingPlacements)
	}
	if len(res.NewNodeClaims) != 1 || len(res.NewNodeClaims[0].Pods) != 1 || res.NewNodeClaims[0].Pods[0].Name != "ebs" {
		t.Errorf("want a new node for the pod with the second EBS volume, got %+v", res.NewNodeClaims)
	}
}

// TestEphemeralAndInlineVolumesCountAgainstAttachLimits: as the kube-scheduler counts them, a generic
// ephemeral volume (its claim <pod>-<volume> not created yet: the template's class decides) and an
// inline CSI volume take an attach slot; the node attaching two EBS volumes, one in use, takes only
// one of the two pods. The ephemeral claim's zones come from its class's allowedTopologies.
func TestEphemeralAndInlineVolumesCountAgainstAttachLimits(t *testing.T) {
	const ebs = "ebs.csi.aws.com"
	n1 := node("n1", "a")
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: ebs, NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](2)}}}}}
	old := withClaim(pendingPod("old"), "old")
	old.Spec.NodeName = "n1"
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-old"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ebs, VolumeHandle: "vol-1"}}}}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	zoned := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3-zone-a", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: ebs, VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"z1"}}}}}}
	scratch := pendingPod("scratch")
	scratch.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}}}}}
	inline := pendingPod("inline")
	inline.Spec.Volumes = []corev1.Volume{{Name: "secrets", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: ebs}}}}
	c := Cluster{
		NodePools:              []*v1.NodePool{nodePool("a")},
		Nodes:                  []*corev1.Node{n1},
		NodeClaims:             []*v1.NodeClaim{claim("a-1", "a", "n1")},
		CSINodes:               []*storagev1.CSINode{csiNode},
		StorageClasses:         []*storagev1.StorageClass{zoned},
		PersistentVolumes:      []*corev1.PersistentVolume{pv},
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claimOf("old", "gp3-zone-a", "pv-old")},
		Pods:                   []*corev1.Pod{old, scratch, inline},
	}
	s, err := Build(c, opts())
	if err != nil {
		t.Fatal(err)
	}
	for k, w := range map[string]string{"default/scratch-data": ebs, "default/inline/secrets": ebs} {
		if g := s.Input.VolumeDrivers[k]; g != w {
			t.Errorf("driver of %s = %q, want %q (all: %v)", k, g, w, s.Input.VolumeDrivers)
		}
	}
	if z := s.Input.VolumeZones["default/scratch-data"]; len(z) != 1 || z[0] != "z1" {
		t.Errorf("zones of the ephemeral claim = %v, want [z1]", z)
	}
	res := solver.Solve(s.Input)
	if err := verify.Verify(s.Input, res); err != nil {
		t.Fatal(err)
	}
	onN1 := 0
	for _, p := range res.ExistingPlacements {
		onN1 += len(p.Pods)
	}
	if onN1 != 1 || len(res.NewNodeClaims) != 1 || len(res.NewNodeClaims[0].Pods) != 1 {
		t.Errorf("want one pod on n1 (one EBS slot left) and the other on a new node; got %d on n1, %d new claims, %d unschedulable", onN1, len(res.NewNodeClaims), len(res.Unschedulable))
	}
}
