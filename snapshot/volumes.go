package snapshot

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/solver"
)

// IsZoneKey reports whether a volume topology key names a zone: topology.kubernetes.io/zone, the
// deprecated failure-domain.beta.kubernetes.io/zone, or a CSI driver's own zone key of the form
// topology.<driver>/zone (e.g. topology.ebs.csi.aws.com/zone), whose values are the zone names.
func IsZoneKey(key string) bool {
	switch key {
	case v1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone:
		return true
	}
	return strings.HasPrefix(key, "topology.") && strings.HasSuffix(key, "/zone")
}

// defaultClassAnnotation marks the StorageClass a claim without storageClassName gets.
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// volumeIndex finds a claim's volume and StorageClass.
type volumeIndex struct {
	pvcs         map[string]*corev1.PersistentVolumeClaim
	pvByName     map[string]*corev1.PersistentVolume
	pvByClaim    map[string]*corev1.PersistentVolume
	classes      map[string]*storagev1.StorageClass
	defaultClass *storagev1.StorageClass
}

func newVolumeIndex(c Cluster) *volumeIndex {
	x := &volumeIndex{pvcs: map[string]*corev1.PersistentVolumeClaim{}, pvByName: map[string]*corev1.PersistentVolume{},
		pvByClaim: map[string]*corev1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{}}
	for _, pvc := range c.PersistentVolumeClaims {
		if pvc != nil {
			x.pvcs[pvc.Namespace+"/"+pvc.Name] = pvc
		}
	}
	for _, pv := range c.PersistentVolumes {
		if pv == nil {
			continue
		}
		x.pvByName[pv.Name] = pv
		if ref := pv.Spec.ClaimRef; ref != nil {
			ns := ref.Namespace
			if ns == "" {
				ns = "default"
			}
			x.pvByClaim[ns+"/"+ref.Name] = pv
		}
	}
	for _, sc := range c.StorageClasses {
		if sc == nil {
			continue
		}
		x.classes[sc.Name] = sc
		if sc.Annotations[defaultClassAnnotation] == "true" && (x.defaultClass == nil || sc.Name < x.defaultClass.Name) {
			x.defaultClass = sc
		}
	}
	return x
}

// lookup returns the claim "namespace/name", its bound volume and its StorageClass, each nil when
// unknown.
func (x *volumeIndex) lookup(key string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, *storagev1.StorageClass) {
	pvc := x.pvcs[key]
	pv := x.pvByClaim[key]
	if pvc != nil && pvc.Spec.VolumeName != "" {
		pv = x.pvByName[pvc.Spec.VolumeName]
	}
	var sc *storagev1.StorageClass
	if pvc != nil {
		sc = x.defaultClass
		if pvc.Spec.StorageClassName != nil {
			sc = x.classes[*pvc.Spec.StorageClassName]
		}
	}
	return pvc, pv, sc
}

// templateClass is the StorageClass a generic ephemeral volume's claim will get: its template's,
// else the default class.
func (x *volumeIndex) templateClass(t *corev1.PersistentVolumeClaimTemplate) *storagev1.StorageClass {
	if t.Spec.StorageClassName != nil {
		return x.classes[*t.Spec.StorageClassName]
	}
	return x.defaultClass
}

// volumeZones maps "namespace/claim" of the pending pods' claims to the zones their volumes can be in:
// a bound volume's node affinity, or for a claim still waiting for its first consumer, the
// StorageClass's allowedTopologies. Claims free to be provisioned in any zone are absent.
func volumeZones(pending []*corev1.Pod, x *volumeIndex) map[string][]string {
	out := map[string][]string{}
	for _, pod := range pending {
		for _, vol := range solver.PodVolumes(pod) {
			if _, done := out[vol.Key]; done || vol.CSIDriver != "" {
				continue
			}
			var zones []string
			switch pvc, pv, sc := x.lookup(vol.Key); {
			case pv != nil:
				zones = pvZones(pv)
			case pvc != nil:
				zones = waitingZones(sc)
			case vol.Template != nil:
				zones = waitingZones(x.templateClass(vol.Template))
			}
			if len(zones) > 0 {
				out[vol.Key] = zones
			}
		}
	}
	return out
}

// pvZones are the zones a volume's required node affinity allows.
func pvZones(pv *corev1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var zones []string
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if IsZoneKey(r.Key) && r.Operator == corev1.NodeSelectorOpIn {
				zones = append(zones, r.Values...)
			}
		}
	}
	return sortedUnique(zones)
}

// waitingZones are the zones a WaitForFirstConsumer StorageClass may provision a volume in: the
// zone values of its allowedTopologies; none means any zone.
func waitingZones(sc *storagev1.StorageClass) []string {
	if sc == nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil
	}
	var zones []string
	for _, term := range sc.AllowedTopologies {
		for _, e := range term.MatchLabelExpressions {
			if IsZoneKey(e.Key) {
				zones = append(zones, e.Values...)
			}
		}
	}
	return sortedUnique(zones)
}

func sortedUnique(vals []string) []string {
	if len(vals) == 0 {
		return nil
	}
	sort.Strings(vals)
	out := vals[:1]
	for _, v := range vals[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
