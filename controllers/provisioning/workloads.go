package provisioning

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/podkind"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch

// workloadOf returns the ReplicaSet, StatefulSet or Job that created the pod, or nil.
func workloadOf(pod *corev1.Pod) *workload {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil
	}
	switch {
	case ref.Kind == "ReplicaSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String(),
		ref.Kind == "StatefulSet" && ref.APIVersion == appsv1.SchemeGroupVersion.String(),
		ref.Kind == "Job" && ref.APIVersion == batchv1.SchemeGroupVersion.String():
		return &workload{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID}
	}
	return nil
}

// workloadsComplete reports whether every workload has as many live pods as it wants, and no
// Deployment in their namespaces has a spec its controller has not acted on yet (a new or scaled
// Deployment is about to create or resize a ReplicaSet). A workload that is gone wants no more pods.
func (p *Provisioner) workloadsComplete(ctx context.Context, workloads []workload) (bool, error) {
	namespaces := map[string]bool{}
	for _, w := range workloads {
		namespaces[w.Namespace] = true
		want, err := p.wantedPods(ctx, w)
		if err != nil {
			return false, err
		}
		if want == 0 {
			continue
		}
		var pods corev1.PodList
		if err := p.kube.List(ctx, &pods, client.MatchingFields{indexes.PodControllerUID: string(w.UID)}, client.UnsafeDisableDeepCopy); err != nil {
			return false, fmt.Errorf("listing pods of %s %s/%s: %w", w.Kind, w.Namespace, w.Name, err)
		}
		live := int32(0)
		for i := range pods.Items {
			if pod := &pods.Items[i]; pod.DeletionTimestamp.IsZero() && !podkind.IsFinished(pod) {
				live++
			}
		}
		if live < want {
			log.FromContext(ctx).V(2).Info("workload still creating pods", "kind", w.Kind, "name", w.Name, "live", live, "want", want)
			return false, nil
		}
	}
	for ns := range namespaces {
		var deploys appsv1.DeploymentList
		if err := p.kube.List(ctx, &deploys, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return false, fmt.Errorf("listing deployments in %s: %w", ns, err)
		}
		for i := range deploys.Items {
			if d := &deploys.Items[i]; d.Status.ObservedGeneration < d.Generation {
				log.FromContext(ctx).V(2).Info("deployment not acted on yet", "name", d.Name)
				return false, nil
			}
		}
	}
	return true, nil
}

// wantedPods is how many live pods the workload wants; zero when it is gone or not the object the
// pod's owner reference names any more.
func (p *Provisioner) wantedPods(ctx context.Context, w workload) (int32, error) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	var (
		obj  client.Object
		want func() int32
	)
	switch w.Kind {
	case "ReplicaSet":
		rs := &appsv1.ReplicaSet{}
		obj, want = rs, func() int32 { return ptr.Deref(rs.Spec.Replicas, 1) }
	case "StatefulSet":
		sts := &appsv1.StatefulSet{}
		obj, want = sts, func() int32 {
			if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
				return 0 // OrderedReady: the next pod comes only once this one runs
			}
			return ptr.Deref(sts.Spec.Replicas, 1)
		}
	case "Job":
		job := &batchv1.Job{}
		obj, want = job, func() int32 { return jobActivePods(job) }
	default:
		return 0, nil
	}
	if err := p.kube.Get(ctx, key, obj); err != nil {
		return 0, client.IgnoreNotFound(fmt.Errorf("getting %s %s: %w", w.Kind, key, err))
	}
	if obj.GetUID() != w.UID {
		return 0, nil
	}
	return want(), nil
}

// jobActivePods is how many pods a Job runs at once: its parallelism, at most the completions still
// missing; none when it is suspended or finished.
func jobActivePods(job *batchv1.Job) int32 {
	if ptr.Deref(job.Spec.Suspend, false) || job.Status.CompletionTime != nil {
		return 0
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return 0
		}
	}
	want := ptr.Deref(job.Spec.Parallelism, 1)
	if job.Spec.Completions != nil {
		want = min(want, max(*job.Spec.Completions-job.Status.Succeeded, 0))
	}
	return want
}
