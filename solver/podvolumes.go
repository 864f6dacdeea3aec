package solver

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// PodVolume is a volume of a pod that a node may have to attach, as the kube-scheduler's volume
// limits count them: persistent volume claims, the claims of generic ephemeral volumes (named
// <pod>-<volume> by the ephemeral volume controller, which may not have created them yet) and inline
// CSI volumes.
type PodVolume struct {
	// Key identifies the volume across pods: "namespace/claim" for a claim, "namespace/pod/volume"
	// for an inline CSI volume (one per pod). Input.VolumeDrivers and VolumeZones are keyed by it.
	Key string
	// Template is a generic ephemeral volume's claim template: its StorageClass decides the driver
	// and zones while the claim does not exist yet.
	Template *corev1.PersistentVolumeClaimTemplate
	// CSIDriver is an inline CSI volume's driver; "" for claims.
	CSIDriver string
}

// PodVolumes lists p's attachable volumes, sorted by key.
func PodVolumes(p *corev1.Pod) []PodVolume {
	var out []PodVolume
	for _, v := range p.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, PodVolume{Key: p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil:
			out = append(out, PodVolume{Key: p.Namespace + "/" + p.Name + "-" + v.Name, Template: v.Ephemeral.VolumeClaimTemplate})
		case v.CSI != nil:
			out = append(out, PodVolume{Key: p.Namespace + "/" + p.Name + "/" + v.Name, CSIDriver: v.CSI.Driver})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
