package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimPodKeepsWhatJoistReads(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "a"},
			Annotations:   map[string]string{"karpenter.sh/do-not-disrupt": "true", corev1.LastAppliedConfigAnnotation: "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"zone": "a"},
			Containers: []corev1.Container{{Name: "app", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "b"}},
				Ports:     []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 8080, HostPort: 8080}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: ptrTo(corev1.ContainerRestartPolicyAlways), Command: []string{"x"}}},
			Volumes: []corev1.Volume{
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
				{Name: "inline", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}},
			},
			SecurityContext:  &corev1.PodSecurityContext{},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			Tolerations:      []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			SchedulerName:    "default-scheduler",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, NominatedNodeName: "n", PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled}}, ContainerStatuses: []corev1.ContainerStatus{{Name: "app"}}},
	}
	out, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	c := got.Spec.Containers[0]
	if c.Image != "" || c.Env != nil || len(c.Ports) != 1 || c.Ports[0].HostPort != 8080 || c.Resources.Requests.Cpu().String() != "1" {
		t.Errorf("container after trim = %+v, want name, resources and the host port only", c)
	}
	if ic := got.Spec.InitContainers[0]; ic.RestartPolicy == nil || ic.Command != nil {
		t.Errorf("init container after trim = %+v, want its restart policy and no command", ic)
	}
	if got.Status.ContainerStatuses != nil || got.ManagedFields != nil || got.Annotations[corev1.LastAppliedConfigAnnotation] != "" {
		t.Errorf("pod kept container statuses, managed fields or last-applied: %+v", got)
	}
	var vols []string
	for _, v := range got.Spec.Volumes {
		vols = append(vols, v.Name)
	}
	if strings.Join(vols, ",") != "data,eph,inline" {
		t.Errorf("volumes after trim = %v, want the claim, generic ephemeral and inline CSI volumes only", vols)
	}
	if got.Spec.SecurityContext != nil || got.Spec.ImagePullSecrets != nil || got.Status.PodIP != "" || got.Status.PodIPs != nil {
		t.Errorf("pod kept its security context (%v), pull secrets (%v) or IPs (%q, %v)", got.Spec.SecurityContext, got.Spec.ImagePullSecrets, got.Status.PodIP, got.Status.PodIPs)
	}
	if len(got.Spec.Tolerations) != 1 || got.Spec.SchedulerName != "default-scheduler" {
		t.Errorf("pod lost its tolerations or scheduler name: %+v", got.Spec)
	}
	if got.Annotations["karpenter.sh/do-not-disrupt"] != "true" || got.Labels["app"] != "a" || got.Spec.NodeSelector["zone"] != "a" ||
		got.Status.NominatedNodeName != "n" || len(got.Status.Conditions) != 1 || got.Status.Phase != corev1.PodRunning {
		t.Errorf("pod lost a field Joist reads: %+v", got)
	}
}

// TrimPod trims a decoded pod in place: it allocates nothing for a pod without volumes to keep (a new
// container slice per pod event was ~800 bytes of garbage a container).
func TestTrimPodAllocatesNothing(t *testing.T) {
	fresh := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80}}},
				{Name: "b", Image: "img"}}, InitContainers: []corev1.Container{{Name: "i", Command: []string{"x"}}}}}
	}
	pods := make([]*corev1.Pod, 0, 101)
	for range 101 {
		pods = append(pods, fresh())
	}
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := TrimPod(pods[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("TrimPod allocated %.0f times per pod, want none", allocs)
	}
	if c := pods[0].Spec.Containers[0]; c.Image != "" || c.Ports != nil || c.Name != "a" {
		t.Errorf("container after trim = %+v, want its name only", c)
	}
}

func TestTrimNodeKeepsWhatJoistReads(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"l": "v"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://n", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.33.0"},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			RuntimeHandlers: []corev1.NodeRuntimeHandler{{Name: "runc"}},
			Images:          []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}}},
	}
	out, err := TrimNode(node)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if got.Status.Images != nil || got.ManagedFields != nil || got.Status.Addresses != nil || got.Status.RuntimeHandlers != nil {
		t.Errorf("node kept images (%v), managed fields, addresses (%v) or runtime handlers (%v)", got.Status.Images, got.Status.Addresses, got.Status.RuntimeHandlers)
	}
	if got.Labels["l"] != "v" || len(got.Spec.Taints) != 1 || got.Spec.ProviderID == "" || got.Status.Allocatable.Cpu().String() != "2" ||
		len(got.Status.Conditions) != 1 || got.Status.NodeInfo.KubeletVersion == "" {
		t.Errorf("node lost a field Joist reads: %+v", got)
	}
}

// TestNoWholeObjectWrites: the cache keeps trimmed Pods and Nodes, so a write that sends a whole
// object read from it (Update) would erase the trimmed fields on the server. Every write in the
// manager's code must be a patch, a create or a delete.
func TestNoWholeObjectWrites(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	for _, dir := range []string{".", "../cloudprovider", "../webhooks", "../cmd", "../snapshot"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.Contains(path, "/fake/") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Update" && len(call.Args) >= 2 {
					found = append(found, fset.Position(call.Pos()).String())
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) > 0 {
		t.Errorf("Update calls in manager code (write a patch of what changes instead): %v", found)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestTrimWorkloadKeepsWhatJoistReads(t *testing.T) {
	replicas, parallelism := int32(3), int32(2)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "w", Namespace: "ns", UID: "uid", Generation: 4,
			Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: "{...}", "keep": "me"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	template := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img"}}}}
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: meta(), Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Template: template()}}
	dep := &appsv1.Deployment{ObjectMeta: meta(), Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: template()},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3}}
	sts := &appsv1.StatefulSet{ObjectMeta: meta(), Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Template: template(),
		PodManagementPolicy: appsv1.ParallelPodManagement, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{}}}}
	job := &batchv1.Job{ObjectMeta: meta(), Spec: batchv1.JobSpec{Parallelism: &parallelism, Completions: &replicas, Template: template()},
		Status: batchv1.JobStatus{Active: 1}}
	for _, obj := range []metav1.Object{rs, dep, sts, job} {
		if _, err := TrimWorkload(obj); err != nil {
			t.Fatal(err)
		}
		if obj.GetManagedFields() != nil || obj.GetAnnotations()[corev1.LastAppliedConfigAnnotation] != "" || obj.GetAnnotations()["keep"] != "me" ||
			obj.GetUID() != "uid" || obj.GetGeneration() != 4 {
			t.Errorf("%T metadata after trim = %+v, want managed fields and last-applied gone, the rest kept", obj, obj)
		}
	}
	if len(rs.Spec.Template.Spec.Containers) != 0 || *rs.Spec.Replicas != 3 {
		t.Errorf("replicaset after trim = %+v, want the replicas without the template", rs.Spec)
	}
	if len(dep.Spec.Template.Spec.Containers) != 0 || dep.Status.ObservedGeneration != 3 {
		t.Errorf("deployment after trim = %+v / %+v, want the status without the template", dep.Spec, dep.Status)
	}
	if len(sts.Spec.Template.Spec.Containers) != 0 || sts.Spec.VolumeClaimTemplates != nil || *sts.Spec.Replicas != 3 ||
		sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("statefulset after trim = %+v, want replicas and policy without the templates", sts.Spec)
	}
	if len(job.Spec.Template.Spec.Containers) != 0 || *job.Spec.Parallelism != 2 || *job.Spec.Completions != 3 || job.Status.Active != 1 {
		t.Errorf("job after trim = %+v / %+v, want parallelism, completions and status without the template", job.Spec, job.Status)
	}
	// Anything else only loses its managed fields.
	ds := &appsv1.DaemonSet{ObjectMeta: meta(), Spec: appsv1.DaemonSetSpec{Template: template()}}
	if _, err := TrimWorkload(ds); err != nil || ds.ManagedFields != nil || len(ds.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("daemonset after trim = %+v (%v), want only the managed fields gone", ds, err)
	}
}

// A running pod keeps the two conditions Joist reads, PodScheduled and Ready, as they were, and
// none of the others; the kept ones are a list of their own (the decoded five are not held).
func TestTrimPodKeepsTheConditionsJoistReads(t *testing.T) {
	at := metav1.Now()
	cond := func(typ corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: at, Reason: "r-" + string(typ)}
	}
	decoded := []corev1.PodCondition{cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady),
		cond(corev1.ContainersReady), cond(corev1.PodScheduled)}
	out, err := TrimPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: decoded}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod).Status.Conditions
	want := []corev1.PodCondition{cond(corev1.PodReady), cond(corev1.PodScheduled)}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("conditions after trim = %+v, want %+v", got, want)
	}
	if cap(got) != 2 || &got[0] == &decoded[0] || &got[0] == &decoded[2] {
		t.Error("the kept conditions still hold the decoded list of five")
	}
	pending, _ := TrimPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{cond(corev1.PodScheduled)}}})
	if c := pending.(*corev1.Pod).Status.Conditions; len(c) != 1 || c[0].Type != corev1.PodScheduled {
		t.Errorf("a pending pod's conditions after trim = %+v, want its PodScheduled", c)
	}
}
