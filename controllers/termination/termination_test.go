package termination

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/indexes"
	"github.com/joist-dev/joist/test/env"
)

// byProviderID answers the termination controller's indexed NodeClaim lookup on a direct client
// (the apiserver has no such field selector; the manager's cache has the index).
type byProviderID struct{ client.Client }

func (c byProviderID) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	claims, ok := list.(*v1.NodeClaimList)
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	if !ok || lo.FieldSelector == nil {
		return c.Client.List(ctx, list, opts...)
	}
	want, found := lo.FieldSelector.RequiresExactMatch(indexes.NodeClaimProviderID)
	if !found {
		return c.Client.List(ctx, list, opts...)
	}
	all := &v1.NodeClaimList{}
	if err := c.Client.List(ctx, all); err != nil {
		return err
	}
	for _, nc := range all.Items {
		if nc.Status.ProviderID == want {
			claims.Items = append(claims.Items, nc)
		}
	}
	return nil
}

// recordingCloud records terminated claims.
type recordingCloud struct {
	cloudprovider.CloudProvider
	deleted []string
}

func (r *recordingCloud) Delete(_ context.Context, nc *v1.NodeClaim) error {
	r.deleted = append(r.deleted, nc.Name)
	return nil
}

func mustCreate(t *testing.T, kube client.Client, obj client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// deletingNode creates a Node and its NodeClaim (with tgp, nil for none, and the disruption command
// record when given) and deletes both; both keep the termination finalizer.
func deletingNode(t *testing.T, kube client.Client, name string, tgp *time.Duration, record ...string) (*corev1.Node, *v1.NodeClaim) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://" + name}}
	mustCreate(t, kube, node)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1.TerminationFinalizer}},
		Spec: v1.NodeClaimSpec{NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}}}
	for _, r := range record {
		nc.Annotations = map[string]string{v1.DisruptionCommandAnnotationKey: r}
	}
	if tgp != nil {
		nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: *tgp}
	}
	mustCreate(t, kube, nc)
	nc.Status.NodeName, nc.Status.ProviderID = name, "kwok://"+name
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{nc, node} {
		if err := kube.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
	return node, nc
}

func runningPod(name, node string, grace int64, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To(grace),
			Containers: []corev1.Container{{Name: "c", Image: "c"}}}}
}

// A node with terminationGracePeriod 10m: its claim gets karpenter.sh/nodeclaim-termination-timestamp
// (deletion + 10m), and each do-not-disrupt pod (never evicted) is deleted as soon as the deadline
// is its own terminationGracePeriodSeconds away — with that whole grace period — not at the
// deadline, when it would have none left.
func TestPodsGetTheirGracePeriodBeforeTheDeadline(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := byProviderID{e.Client}
	tgp := 10 * time.Minute
	node, nc := deletingNode(t, kube, "node-a", &tgp)
	dnd := map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	long, short := runningPod("long", "node-a", 300, dnd), runningPod("short", "node-a", 30, dnd)
	mustCreate(t, kube, long)
	mustCreate(t, kube, short)

	deadline := nc.DeletionTimestamp.Add(tgp)
	clk := clocktesting.NewFakeClock(nc.DeletionTimestamp.Add(time.Minute))
	c := New(kube, &recordingCloud{}, events.NewFakeRecorder(100), clk, Options{EvictionRetry: time.Second, DrainPoll: time.Second})
	reconcileNode := func() {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(obj client.Object) {
		t.Helper()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
	reconcileNode()
	get(nc)
	if got, want := nc.Annotations[v1.NodeClaimTerminationTimestampAnnotationKey], deadline.UTC().Format(time.RFC3339); got != want {
		t.Errorf("termination timestamp = %q, want %q", got, want)
	}
	get(long)
	if !long.DeletionTimestamp.IsZero() {
		t.Fatalf("pod long deleted 9 minutes before the deadline")
	}

	clk.SetTime(deadline.Add(-300*time.Second + time.Second)) // the deadline is 299 s away: long must go now
	reconcileNode()
	get(long)
	get(short)
	if long.DeletionTimestamp.IsZero() {
		t.Fatal("pod long (300 s grace) not deleted 299 s before the deadline: it will be killed short of its grace period")
	}
	if got := ptr.Deref(long.DeletionGracePeriodSeconds, -1); got < 290 {
		t.Errorf("pod long deleted with %d s of grace, want about 300", got)
	}
	if !short.DeletionTimestamp.IsZero() {
		t.Errorf("pod short (30 s grace) deleted 299 s before the deadline; it waits for its do-not-disrupt to end")
	}
}

// A pod that stays on the node (it tolerates the disrupted taint) keeps its volume attached until
// the instance goes: the drain must not wait for that VolumeAttachment, only for the others.
func TestVolumeWaitIgnoresVolumesOfPodsThatStay(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	kube := byProviderID{e.Client}
	node, _ := deletingNode(t, kube, "node-b", nil)

	mustCreate(t, kube, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-stay"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"}}}})
	mustCreate(t, kube, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{
		VolumeName: "pv-stay", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	agent := runningPod("agent", "node-b", 30, nil)
	agent.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
	agent.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	mustCreate(t, kube, agent)
	attachment := func(name, pv string) *storagev1.VolumeAttachment {
		va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.com", NodeName: "node-b", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}}}
		mustCreate(t, kube, va)
		va.Status.Attached = true
		if err := kube.Status().Update(ctx, va); err != nil {
			t.Fatal(err)
		}
		return va
	}
	attachment("va-stay", "pv-stay")
	gone := attachment("va-gone", "pv-gone")

	cloud := &recordingCloud{}
	c := New(kube, cloud, events.NewFakeRecorder(100), clocktesting.NewFakeClock(time.Now()), Options{EvictionRetry: time.Second, DrainPoll: time.Second})
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(node)}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(cloud.deleted) != 0 {
		t.Fatal("instance terminated while the volume of an evicted pod is still attached")
	}
	if err := kube.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(cloud.deleted) != 1 {
		t.Fatal("the drain still waits for the volume of a pod that stays on the node: the node never terminates")
	}
}
