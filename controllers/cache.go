package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/snapshot"
)

// lastAppliedAnnotation is kubectl's copy of the whole applied object: often the largest field of a
// pod or node, and never read by Joist.
const lastAppliedAnnotation = corev1.LastAppliedConfigAnnotation

// CacheOptions are the informer cache settings the controllers are written for. Managed fields are
// dropped from every object on the way in; pods keep only the record of who set
// status.nominatedNodeName, which tells Joist's nominations from the kube-scheduler's after a
// restart. Pods and nodes are further trimmed to what Joist reads (TrimPod, TrimNode): at 50,000
// pods the cache is most of the manager's memory.
//
// Every write of a Pod or Node in Joist is a patch that carries only what it changes (merge patches
// computed against the cached copy, JSON patches, evictions); none sends a whole cached object, which
// would erase the trimmed fields on the server. controllers/cache_test.go checks this stays true.
//
// Cached pods also share equal maps (labels, annotations, node selector, container requests and
// limits) and tolerations, nodes their annotations, capacity and allocatable, and NodeClaims their
// annotations, requirements and resource lists, through one table per cache (sharedMaps); the
// strings they commonly hold equal are interned.
func CacheOptions() cache.Options {
	shared := newSharedMaps()
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:         {Transform: shared.trimAndSharePod},
			&corev1.Node{}:        {Transform: shared.trimAndShareNode},
			&v1.NodeClaim{}:       {Transform: shared.stripAndShareClaim},
			&appsv1.ReplicaSet{}:  {Transform: TrimWorkload},
			&appsv1.Deployment{}:  {Transform: TrimWorkload},
			&appsv1.StatefulSet{}: {Transform: TrimWorkload},
			&batchv1.Job{}:        {Transform: TrimWorkload},
		},
	}
}

// TrimPod is the pod cache transform: it keeps what scheduling, disruption, metrics and the
// guardrails read (metadata but managed fields and kubectl's last-applied copy; the spec but, of
// each container, everything except name, resources, ports and restart policy; the status but
// container statuses and the conditions Joist does not read) and drops the rest, mostly container
// env, commands, probes, mounts and the per-container status. Of the volumes it keeps those that
// attach to a node (claims, generic ephemeral and inline CSI volumes: volume topology and attach
// limits); the service-account token,
// config map, secret, downward API and emptyDir volumes every pod has are never read (~1 KB a pod
// as decoded). The pod's security context, image pull secrets, host aliases, DNS config, readiness
// gates and its IPs and start time are not read either.
func TrimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return snapshot.KeepNominationOwner(obj)
	}
	if _, err := snapshot.KeepNominationOwner(pod); err != nil {
		return nil, err
	}
	delete(pod.Annotations, lastAppliedAnnotation)
	pod.Spec.Containers = trimContainers(pod.Spec.Containers)
	pod.Spec.InitContainers = trimContainers(pod.Spec.InitContainers)
	pod.Spec.EphemeralContainers = nil // never count towards requests
	pod.Spec.Volumes = attachableVolumes(pod.Spec.Volumes)
	pod.Spec.SecurityContext = nil
	pod.Spec.ImagePullSecrets = nil
	pod.Spec.HostAliases = nil
	pod.Spec.DNSConfig = nil
	pod.Spec.ReadinessGates = nil
	pod.Status.HostIP, pod.Status.HostIPs, pod.Status.PodIP, pod.Status.PodIPs = "", nil, "", nil
	pod.Status.StartTime = nil
	pod.Status.Conditions = conditionsRead(pod.Status.Conditions)
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = nil
	pod.Status.EphemeralContainerStatuses = nil
	return pod, nil
}

// trimAndSharePod is TrimPod, then the pod's maps replaced by their shared copies.
func (s *sharedMaps) trimAndSharePod(obj any) (any, error) {
	out, err := TrimPod(obj)
	if pod, ok := out.(*corev1.Pod); ok && err == nil {
		s.sharePod(pod)
	}
	return out, err
}

// trimAndShareNode is TrimNode, then the node's maps replaced by their shared copies and its common
// strings interned.
func (s *sharedMaps) trimAndShareNode(obj any) (any, error) {
	out, err := TrimNode(obj)
	if node, ok := out.(*corev1.Node); ok && err == nil {
		s.shareNode(node)
	}
	return out, err
}

// stripAndShareClaim drops the claim's managed fields, then replaces its maps and requirements by
// their shared copies and interns its common strings.
func (s *sharedMaps) stripAndShareClaim(obj any) (any, error) {
	nc, ok := obj.(*v1.NodeClaim)
	if !ok {
		return cache.TransformStripManagedFields()(obj)
	}
	nc.ManagedFields = nil
	s.shareClaim(nc)
	return nc, nil
}

// conditionsRead keeps the pod conditions Joist reads: PodScheduled (the kube-scheduler's verdict:
// the batcher, snapshot.ScheduledMessage) and Ready (PDB health, the pod metrics). A running pod
// also carries PodReadyToStartContainers, Initialized and ContainersReady (120 bytes each and their
// messages); the kept ones are copied into a list of their own so that the decoded one is freed.
func conditionsRead(cs []corev1.PodCondition) []corev1.PodCondition {
	read := func(c *corev1.PodCondition) bool { return c.Type == corev1.PodScheduled || c.Type == corev1.PodReady }
	n := 0
	for i := range cs {
		if read(&cs[i]) {
			n++
		}
	}
	if n == len(cs) {
		return cs
	}
	if n == 0 {
		return nil
	}
	out := make([]corev1.PodCondition, 0, n)
	for i := range cs {
		if read(&cs[i]) {
			out = append(out, cs[i])
		}
	}
	return out
}

// attachableVolumes keeps the volumes the solver reads (solver.PodVolumes): persistent volume
// claims, generic ephemeral volumes and inline CSI volumes; nil when there are none.
func attachableVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil {
			out = append(out, v)
		}
	}
	return out
}

// trimContainers keeps the container fields the solver reads: requests and limits, host ports, and
// the restart policy that makes an init container a sidecar. It trims the decoded slice in place (a
// container struct is ~800 bytes before any field: a new slice per pod event was garbage at once).
func trimContainers(cs []corev1.Container) []corev1.Container {
	for i := range cs {
		ports := cs[i].Ports[:0]
		for _, p := range cs[i].Ports {
			if p.HostPort != 0 {
				ports = append(ports, p)
			}
		}
		if len(ports) == 0 {
			ports = nil
		}
		cs[i] = corev1.Container{Name: cs[i].Name, Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy, Ports: ports}
	}
	return cs
}

// TrimNode is the node cache transform: it drops managed fields, kubectl's last-applied copy and the
// status lists Joist never reads (container images, which kubelets report by the dozen, attached
// volumes, addresses, runtime handlers, the kubelet's endpoint, config source and features).
func TrimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return cache.TransformStripManagedFields()(obj)
	}
	node.ManagedFields = nil
	delete(node.Annotations, lastAppliedAnnotation)
	node.Status.Images = nil
	node.Status.VolumesAttached = nil
	node.Status.VolumesInUse = nil
	node.Status.Addresses = nil
	node.Status.RuntimeHandlers = nil
	node.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{}
	node.Status.Config = nil
	node.Status.Features = nil
	return node, nil
}

// TrimWorkload is the transform of the workloads the provisioner asks whether they are still
// creating pods (ReplicaSets, Deployments, StatefulSets, Jobs): it reads their replica counts,
// pod-management policy, parallelism, completions, generations and status, never their pod
// template — the largest part of each, and Deployments keep ten old ReplicaSets apiece. The template
// and the StatefulSet's volume claim templates go, with managed fields and kubectl's last-applied
// copy. (DaemonSets keep theirs: the snapshot reads the daemons' requests and tolerations.)
func TrimWorkload(obj any) (any, error) {
	switch w := obj.(type) {
	case *appsv1.ReplicaSet:
		trimWorkloadMeta(&w.ObjectMeta)
		w.Spec.Template = corev1.PodTemplateSpec{}
	case *appsv1.Deployment:
		trimWorkloadMeta(&w.ObjectMeta)
		w.Spec.Template = corev1.PodTemplateSpec{}
	case *appsv1.StatefulSet:
		trimWorkloadMeta(&w.ObjectMeta)
		w.Spec.Template = corev1.PodTemplateSpec{}
		w.Spec.VolumeClaimTemplates = nil
	case *batchv1.Job:
		trimWorkloadMeta(&w.ObjectMeta)
		w.Spec.Template = corev1.PodTemplateSpec{}
	default:
		return cache.TransformStripManagedFields()(obj)
	}
	return obj, nil
}

func trimWorkloadMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	delete(m.Annotations, lastAppliedAnnotation)
}
