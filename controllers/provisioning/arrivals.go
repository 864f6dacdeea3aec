package provisioning

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joist-dev/joist/controllers/indexes"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch

// arrivalsDone reports whether the workload controllers have finished creating pods: every
// Deployment's spec has been acted on, and every ReplicaSet, StatefulSet and Job has as many live
// pods as it wants. Then no more pods are on their way and a batch can close without waiting out the
// idle window. Pods of other owners (bare pods, custom controllers) are not foreseen; the settle
// window and, behind it, the idle window cover them.
func (p *Provisioner) arrivalsDone(ctx context.Context) (bool, error) {
	var deploys appsv1.DeploymentList
	if err := p.kube.List(ctx, &deploys, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for i := range deploys.Items {
		d := &deploys.Items[i]
		if d.Status.ObservedGeneration < d.Generation {
			return false, nil
		}
	}
	var rss appsv1.ReplicaSetList
	if err := p.kube.List(ctx, &rss, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for i := range rss.Items {
		rs := &rss.Items[i]
		if done, err := p.ownerHasPods(ctx, rs.UID, rs.Spec.Replicas); !done || err != nil {
			return false, err
		}
	}
	var sts appsv1.StatefulSetList
	if err := p.kube.List(ctx, &sts, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for i := range sts.Items {
		s := &sts.Items[i]
		if done, err := p.ownerHasPods(ctx, s.UID, s.Spec.Replicas); !done || err != nil {
			return false, err
		}
	}
	var jobs batchv1.JobList
	if err := p.kube.List(ctx, &jobs, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for i := range jobs.Items {
		if done, err := p.ownerHasPods(ctx, jobs.Items[i].UID, jobActivePods(&jobs.Items[i])); !done || err != nil {
			return false, err
		}
	}
	return true, nil
}

// jobActivePods is how many pods a Job runs at once: its parallelism, at most the completions still
// missing; none when it is suspended or finished.
func jobActivePods(job *batchv1.Job) *int32 {
	if ptr.Deref(job.Spec.Suspend, false) || job.Status.CompletionTime != nil {
		return ptr.To[int32](0)
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return ptr.To[int32](0)
		}
	}
	want := ptr.Deref(job.Spec.Parallelism, 1)
	if job.Spec.Completions != nil {
		want = min(want, max(*job.Spec.Completions-job.Status.Succeeded, 0))
	}
	return &want
}

// ownerHasPods reports whether the owner has at least the wanted number of pods that are not being
// deleted or finished (nil wants one, the API default).
func (p *Provisioner) ownerHasPods(ctx context.Context, owner types.UID, replicas *int32) (bool, error) {
	want := int32(1)
	if replicas != nil {
		want = *replicas
	}
	if want == 0 {
		return true, nil
	}
	var pods corev1.PodList
	if err := p.kube.List(ctx, &pods, client.MatchingFields{indexes.PodControllerUID: string(owner)}, client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	live := int32(0)
	for i := range pods.Items {
		if pod := &pods.Items[i]; pod.DeletionTimestamp.IsZero() && !isTerminal(pod) {
			live++
		}
	}
	return live >= want, nil
}
