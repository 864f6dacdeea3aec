package provisioning

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joist-dev/joist/controllers/indexes"
)

func podOf(kind, apiVersion, name string, uid types.UID, i int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-%d", name, i), Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}},
	}}
}

func provisionerWith(t *testing.T, objs ...client.Object) *Provisioner {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, indexes.PodControllerUID, func(o client.Object) []string {
			if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
				return []string{string(ref.UID)}
			}
			return nil
		}).Build()
	return &Provisioner{kube: kube}
}

func TestWorkloadsComplete(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "rs-uid"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](5), Completions: ptr.To[int32](4)}, Status: batchv1.JobStatus{Succeeded: 2}}
	rsPods := func(n int) []client.Object {
		var out []client.Object
		for i := 0; i < n; i++ {
			out = append(out, podOf("ReplicaSet", "apps/v1", "web-1", "rs-uid", i))
		}
		return out
	}
	web := *workloadOf(podOf("ReplicaSet", "apps/v1", "web-1", "rs-uid", 0))
	batch := *workloadOf(podOf("Job", "batch/v1", "batch", "job-uid", 0))
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		workloads []workload
		want      bool
	}{
		{"replicaset still creating", append(rsPods(2), rs), []workload{web}, false},
		{"replicaset has all its pods", append(rsPods(3), rs), []workload{web}, true},
		{"replicaset gone", rsPods(1), []workload{web}, true},
		{"replicaset replaced by one of the same name", append(rsPods(1), &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "other"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}), []workload{web}, true},
		{"deployment not acted on yet", append(rsPods(3), rs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "default", Generation: 1}}), []workload{web}, false},
		{"job wants its missing completions (2) only", []client.Object{job, podOf("Job", "batch/v1", "batch", "job-uid", 0), podOf("Job", "batch/v1", "batch", "job-uid", 1)}, []workload{batch}, true},
		{"ordered statefulset waits for its pods to run before creating more", []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "sts-uid"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}},
			podOf("StatefulSet", "apps/v1", "db", "sts-uid", 0)}, []workload{{Kind: "StatefulSet", Namespace: "default", Name: "db", UID: "sts-uid"}}, true},
		{"parallel statefulset still creating", []client.Object{
			&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "sts-uid"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), PodManagementPolicy: appsv1.ParallelPodManagement}},
			podOf("StatefulSet", "apps/v1", "db", "sts-uid", 0)}, []workload{{Kind: "StatefulSet", Namespace: "default", Name: "db", UID: "sts-uid"}}, false},
		{"job still creating", []client.Object{job, podOf("Job", "batch/v1", "batch", "job-uid", 0)}, []workload{batch}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := provisionerWith(t, tc.objs...).workloadsComplete(context.Background(), tc.workloads)
			if err != nil || got != tc.want {
				t.Errorf("workloadsComplete = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestWorkloadOf(t *testing.T) {
	if w := workloadOf(podOf("ReplicaSet", "apps/v1", "web-1", "rs-uid", 0)); w == nil || w.Name != "web-1" || w.Kind != "ReplicaSet" {
		t.Errorf("workloadOf(replicaset pod) = %v", w)
	}
	if w := workloadOf(podOf("Rollout", "argoproj.io/v1alpha1", "canary", "r-uid", 0)); w != nil {
		t.Errorf("a custom controller's pod must count as of no known workload, got %v", w)
	}
	if w := workloadOf(&corev1.Pod{}); w != nil {
		t.Errorf("a bare pod has no workload, got %v", w)
	}
}
