package snapshot

import (
	"encoding/json"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ExpandAll is Expand over several workloads, their pods in order.
func ExpandAll[T runtime.Object](objs []T) ([]*corev1.Pod, error) {
	var pods []*corev1.Pod
	for _, obj := range objs {
		ps, err := Expand(obj)
		if err != nil {
			if m, ok := any(obj).(metav1.Object); ok {
				return nil, fmt.Errorf("expanding %s/%s: %w", m.GetNamespace(), m.GetName(), err)
			}
			return nil, err
		}
		pods = append(pods, ps...)
	}
	return pods, nil
}

// Expand turns a workload into the pods its controller would create: Deployments spec.replicas pods
// (default 1) named <name>-<hash>-<i>, ReplicaSets <name>-<i>, StatefulSets spec.replicas pods named
// <name>-<i> with their volume claims, Jobs min(parallelism, completions) pods (default 1). Pods get
// the controller's labels and owner reference and deterministic UIDs (StableUID), so the same
// workload always expands to the same pods. An empty namespace means "default".
func Expand(obj runtime.Object) ([]*corev1.Pod, error) {
	var (
		meta     metav1.ObjectMeta
		template corev1.PodTemplateSpec
		replicas int32 = 1
		kind     string
		// extraLabels are those the controller adds to each pod.
		extraLabels = map[string]string{}
		named       func(i int32) string
		claims      []corev1.PersistentVolumeClaim
	)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		meta, template, kind = o.ObjectMeta, o.Spec.Template, "ReplicaSet"
		if o.Spec.Replicas != nil {
			replicas = *o.Spec.Replicas
		}
		hash := templateHash(&template)
		extraLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		named = func(i int32) string { return fmt.Sprintf("%s-%s-%d", meta.Name, hash, i) }
	case *appsv1.ReplicaSet:
		meta, template, kind = o.ObjectMeta, o.Spec.Template, "ReplicaSet"
		if o.Spec.Replicas != nil {
			replicas = *o.Spec.Replicas
		}
		named = func(i int32) string { return fmt.Sprintf("%s-%d", meta.Name, i) }
	case *appsv1.StatefulSet:
		meta, template, kind = o.ObjectMeta, o.Spec.Template, "StatefulSet"
		if o.Spec.Replicas != nil {
			replicas = *o.Spec.Replicas
		}
		claims = o.Spec.VolumeClaimTemplates
		named = func(i int32) string { return fmt.Sprintf("%s-%d", meta.Name, i) }
	case *batchv1.Job:
		meta, template, kind = o.ObjectMeta, o.Spec.Template, "Job"
		if o.Spec.Parallelism != nil {
			replicas = *o.Spec.Parallelism
		}
		if o.Spec.Completions != nil && *o.Spec.Completions < replicas {
			replicas = *o.Spec.Completions
		}
		extraLabels[batchv1.JobNameLabel] = meta.Name
		named = func(i int32) string { return fmt.Sprintf("%s-%d", meta.Name, i) }
	default:
		return nil, fmt.Errorf("cannot expand %T into pods; supported are Deployment, ReplicaSet, StatefulSet and Job", obj)
	}
	if replicas < 0 {
		return nil, fmt.Errorf("replica count %d is negative", replicas)
	}
	if len(template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("spec.template.spec.containers is empty; a pod needs at least one container")
	}
	namespace := namespaceOr(meta.Namespace)
	owner := metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: kind, Name: meta.Name, UID: StableUID("owner", namespace, meta.Name),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	if kind == "Job" {
		owner.APIVersion = "batch/v1"
	}
	pods := make([]*corev1.Pod, 0, replicas)
	for i := range replicas {
		pod := &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				Name:            named(i),
				Namespace:       namespace,
				Labels:          map[string]string{},
				Annotations:     template.Annotations,
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Spec:   *template.Spec.DeepCopy(),
			Status: corev1.PodStatus{Phase: corev1.PodPending},
		}
		for k, v := range template.Labels {
			pod.Labels[k] = v
		}
		for k, v := range extraLabels {
			pod.Labels[k] = v
		}
		if kind == "StatefulSet" {
			pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
			for _, c := range claims {
				pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
					Name: c.Name,
					VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
						ClaimName: c.Name + "-" + pod.Name,
					}},
				})
			}
		}
		pod.UID = StableUID("pod", namespace, pod.Name)
		pods = append(pods, pod)
	}
	return pods, nil
}

// templateHash stands in for the pod-template-hash a Deployment's ReplicaSet carries: stable for
// the same template.
func templateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())[:8]
}

// StableUID is a deterministic stand-in for a server-assigned UID, shaped like a UUID.
func StableUID(kind, namespace, name string) types.UID {
	h := fnv.New128a()
	_, _ = h.Write([]byte(kind + "/" + namespace + "/" + name))
	b := h.Sum(nil)
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

func namespaceOr(ns string) string {
	if ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}
