package snapshot

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/joist-dev/joist/podkind"
	"github.com/joist-dev/joist/solver"
)

// Volume attach limits. A node attaches at most so many volumes of each CSI driver (an EBS-backed
// EC2 instance, say, 25 or fewer), whatever its cpu and memory: the kube-scheduler's NodeVolumeLimits
// filter refuses a pod whose new volumes would go over, so the solver must not plan it there.

// migratedDrivers maps the in-tree volume plugins the CSI migration moved onto a driver, as they
// appear in StorageClass provisioners and in legacy attachable-volumes-* node resources.
var migratedDrivers = map[string]string{
	"kubernetes.io/aws-ebs": "ebs.csi.aws.com", "aws-ebs": "ebs.csi.aws.com",
	"kubernetes.io/gce-pd": "pd.csi.storage.gke.io", "gce-pd": "pd.csi.storage.gke.io",
	"kubernetes.io/azure-disk": "disk.csi.azure.com", "azure-disk": "disk.csi.azure.com",
	"kubernetes.io/cinder": "cinder.csi.openstack.org", "cinder": "cinder.csi.openstack.org",
}

func csiDriver(name string) string {
	if d, ok := migratedDrivers[name]; ok {
		return d
	}
	return name
}

// attachableVolumesPrefix starts the node resources that carried attach limits before CSINode did:
// attachable-volumes-csi-<driver>, or attachable-volumes-<in-tree plugin>.
const attachableVolumesPrefix = "attachable-volumes-"

// attachLimits is how many volumes the node attaches per CSI driver: its CSINode's allocatable
// count, or else the node's attachable-volumes-* allocatable. Nil when no limit is known.
func attachLimits(node *corev1.Node, csiNode *storagev1.CSINode) map[string]int {
	var out map[string]int
	set := func(driver string, n int64) {
		if out == nil {
			out = map[string]int{}
		}
		if _, done := out[driver]; !done {
			out[driver] = int(n)
		}
	}
	if csiNode != nil {
		for _, d := range csiNode.Spec.Drivers {
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				set(d.Name, int64(*d.Allocatable.Count))
			}
		}
	}
	for name, q := range node.Status.Allocatable {
		rest, ok := strings.CutPrefix(string(name), attachableVolumesPrefix)
		if !ok {
			continue
		}
		if driver, ok := strings.CutPrefix(rest, "csi-"); ok {
			set(driver, q.Value())
		} else {
			set(csiDriver(rest), q.Value())
		}
	}
	return out
}

// volumeDrivers maps the keys of the pods' volumes (solver.PodVolumes) to the CSI driver attaching
// each: an inline CSI volume's driver; for a claim, the bound volume's CSI driver (or the driver its
// in-tree plugin migrated to), else the provisioner of the claim's StorageClass — for a generic
// ephemeral volume whose claim does not exist yet, of its template's class. Volumes of neither kind
// (NFS, local, unknown class) are absent and count against no limit.
func volumeDrivers(pods []*corev1.Pod, x *volumeIndex) map[string]string {
	out := map[string]string{}
	seen := map[string]bool{}
	for _, pod := range pods {
		if pod == nil || podkind.IsFinished(pod) {
			continue
		}
		for _, vol := range solver.PodVolumes(pod) {
			if seen[vol.Key] {
				continue
			}
			seen[vol.Key] = true
			d := vol.CSIDriver
			if d == "" {
				pvc, pv, sc := x.lookup(vol.Key)
				if pvc == nil && pv == nil && vol.Template != nil {
					pvc, sc = &corev1.PersistentVolumeClaim{Spec: vol.Template.Spec}, x.templateClass(vol.Template)
				}
				d = claimDriver(pvc, pv, sc)
			}
			if d != "" {
				out[vol.Key] = d
			}
		}
	}
	return out
}

func claimDriver(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, sc *storagev1.StorageClass) string {
	if pv != nil {
		switch src := pv.Spec.PersistentVolumeSource; {
		case src.CSI != nil:
			return src.CSI.Driver
		case src.AWSElasticBlockStore != nil:
			return csiDriver("aws-ebs")
		case src.GCEPersistentDisk != nil:
			return csiDriver("gce-pd")
		case src.AzureDisk != nil:
			return csiDriver("azure-disk")
		case src.Cinder != nil:
			return csiDriver("cinder")
		}
		return ""
	}
	if pvc != nil && sc != nil {
		return csiDriver(sc.Provisioner)
	}
	return ""
}
