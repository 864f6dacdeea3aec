package nodeclaim_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// fakeCloud is a recording provider for narrow tests: Create launches nothing and fails with an
// InsufficientCapacityError naming two offerings.
type fakeCloud struct{ cloudprovider.CloudProvider }

func (fakeCloud) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	return nil, &cloudprovider.InsufficientCapacityError{Err: context.DeadlineExceeded, Offerings: []cloudprovider.UnavailableOffering{
		{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}, {InstanceType: "c5.large", Zone: "us-west-2b", CapacityType: "spot"}}}
}

func newClient(objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	return fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1.NodeClaim{}).
		WithIndex(&corev1.Node{}, "spec.providerID", func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }).
		WithIndex(&v1.NodeClaim{}, "status.providerID", func(o client.Object) []string { return []string{o.(*v1.NodeClaim).Status.ProviderID} }).
		WithIndex(&corev1.Pod{}, "metadata.uid", func(o client.Object) []string { return []string{string(o.GetUID())} }).
		Build()
}

// TestRegistersByProviderIDWhenNodeNameDiffers: on EC2 the Node is named after the instance's
// private DNS name; the claim finds it by provider ID and records the node name.
func TestRegistersByProviderIDWhenNodeNameDiffers(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc12", Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}}
	nc.Status.ProviderID = "aws:///us-west-2a/i-0123"
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-17.us-west-2.compute.internal"},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	kube := newClient(nc, node)
	c := nodeclaim.New(kube, fakeCloud{}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(now), nodeclaim.DefaultOptions())
	for i := 0; i < 3; i++ {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(v1.ConditionTypeRegistered) || got.Status.NodeName != node.Name {
		t.Fatalf("claim registered %v on node %q, want the node found by provider ID", got.IsTrue(v1.ConditionTypeRegistered), got.Status.NodeName)
	}
	gotNode := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: node.Name}, gotNode); err != nil {
		t.Fatal(err)
	}
	if gotNode.Labels[v1.NodeRegisteredLabelKey] != "true" || gotNode.Labels[v1.NodePoolLabelKey] != "default" {
		t.Errorf("node labels = %v, want the claim's labels and registered=true", gotNode.Labels)
	}
	// Release (lifting the unregistered taint) is controllers/nomination's, not the lifecycle's.
	if !slices.ContainsFunc(gotNode.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.UnregisteredTaintKey }) {
		t.Errorf("the lifecycle lifted the unregistered taint: %v", gotNode.Spec.Taints)
	}
}

// TestLaunchPathMarksInsufficientCapacityOfferings: the launch path, not each provider, marks the
// offerings an InsufficientCapacityError names, then deletes the claim.
func TestLaunchPathMarksInsufficientCapacityOfferings(t *testing.T) {
	ctx := context.Background()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "ice", CreationTimestamp: metav1.Now()}}
	kube := newClient(nc)
	clk := clocktesting.NewFakeClock(time.Now())
	unavailable := cloudprovider.NewUnavailableOfferings(clk, 0)
	c := nodeclaim.New(kube, fakeCloud{}, unavailable, events.NewFakeRecorder(10), clk, nodeclaim.DefaultOptions())
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "ice"}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []cloudprovider.UnavailableOffering{{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"}, {InstanceType: "c5.large", Zone: "us-west-2b", CapacityType: "spot"}} {
		if !unavailable.IsUnavailable(o) {
			t.Errorf("%+v not marked unavailable", o)
		}
	}
	got := &v1.NodeClaim{}
	err := kube.Get(ctx, client.ObjectKey{Name: "ice"}, got)
	if err == nil && got.DeletionTimestamp.IsZero() {
		t.Errorf("claim not deleted after insufficient capacity")
	}
}

// lagging serves the Node as the cache read it before a status update the apiserver has since
// applied (the node's Ready heartbeat, say): its resourceVersion is older than the server's.
type lagging struct {
	client.Client
	node *corev1.Node
}

func (l lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if nodes, ok := list.(*corev1.NodeList); ok {
		nodes.Items = []corev1.Node{*l.node.DeepCopy()}
		return nil
	}
	return l.Client.List(ctx, list, opts...)
}

// A claim registers in one reconcile although its Node's status changed after the cache read it:
// the node already has the claim's taints, so labels and the finalizer are merged without an
// optimistic lock on the whole Node (which lost that race to every heartbeat and retried).
func TestRegisterDoesNotLoseToTheNodesStatusUpdates(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc12", Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}}
	nc.Status.ProviderID = "kwok://default-abc12"
	nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Finalizers: []string{"example.com/keep"}},
		Spec:       corev1.NodeSpec{ProviderID: nc.Status.ProviderID, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}},
	}
	kube := newClient(nc, node)
	read := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: node.Name}, read); err != nil {
		t.Fatal(err)
	}
	heartbeat := read.DeepCopy()
	heartbeat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := kube.Status().Update(ctx, heartbeat); err != nil {
		t.Fatal(err)
	}
	c := nodeclaim.New(lagging{kube, read}, fakeCloud{}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(now), nodeclaim.DefaultOptions())
	res, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
	if err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(v1.ConditionTypeRegistered) {
		t.Fatalf("claim not registered after one reconcile (result %+v): the node patch lost to the node's status update", res)
	}
	gotNode := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: node.Name}, gotNode); err != nil {
		t.Fatal(err)
	}
	if gotNode.Labels[v1.NodeRegisteredLabelKey] != "true" || gotNode.Labels[v1.NodePoolLabelKey] != "default" {
		t.Errorf("node labels = %v, want the claim's labels and registered=true", gotNode.Labels)
	}
	if !slices.Equal(gotNode.Finalizers, []string{"example.com/keep", v1.TerminationFinalizer}) {
		t.Errorf("node finalizers = %v, want the node's own kept and the termination finalizer added", gotNode.Finalizers)
	}
	if len(gotNode.Status.Conditions) != 1 {
		t.Errorf("the node's status update was lost: conditions %v", gotNode.Status.Conditions)
	}
}

// nodeCreatingCloud launches as KWOK does: it creates the Node itself and names it in the result.
type nodeCreatingCloud struct {
	cloudprovider.CloudProvider
	kube client.Client
}

func (c nodeCreatingCloud) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: map[string]string{v1.LabelInstanceType: "m5.large"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://" + nc.Name, Taints: []corev1.Taint{v1.UnregisteredNoExecuteTaint}}}
	if err := c.kube.Create(ctx, node); err != nil {
		return nil, err
	}
	out := nc.DeepCopy()
	out.Labels = map[string]string{v1.LabelInstanceType: "m5.large"}
	out.Status.ProviderID, out.Status.NodeName = node.Spec.ProviderID, node.Name
	return out, nil
}

// unseenNodes is a cache that has not shown any Node yet.
type unseenNodes struct{ client.Client }

func (u unseenNodes) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.NodeList); ok {
		return nil
	}
	return u.Client.List(ctx, list, opts...)
}

// A claim whose provider created and named its Node at launch is registered in the launch's own
// reconcile (the Node read from the apiserver, as the cache does not show it yet): one status write
// carries Launched, Registered and Initialized=Unknown, instead of a second reconcile on the
// lifecycle's queue and a second status write once the cache shows the Node.
func TestLaunchRegistersTheNodeTheProviderCreated(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-xyz", UID: "uid-xyz",
		Labels: map[string]string{v1.NodePoolLabelKey: "default"}, CreationTimestamp: metav1.NewTime(now)}}
	kube := newClient(nc)
	c := nodeclaim.New(unseenNodes{kube}, nodeCreatingCloud{kube: kube}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(now), nodeclaim.DefaultOptions())
	c.SetLive(kube)
	if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
		t.Fatal(err)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(v1.ConditionTypeLaunched) || !got.IsTrue(v1.ConditionTypeRegistered) || got.Status.NodeName != nc.Name {
		t.Fatalf("after the launch's reconcile: launched %v, registered %v (%v), node %q; want registered on %s",
			got.IsTrue(v1.ConditionTypeLaunched), got.IsTrue(v1.ConditionTypeRegistered), got.GetCondition(v1.ConditionTypeRegistered), got.Status.NodeName, nc.Name)
	}
	if cond := got.GetCondition(v1.ConditionTypeInitialized); cond == nil || cond.Status != metav1.ConditionUnknown {
		t.Errorf("Initialized = %v, want Unknown (waiting for Ready and the release) in the same write", cond)
	}
	node := &corev1.Node{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[v1.NodeRegisteredLabelKey] != "true" || node.Labels[v1.NodePoolLabelKey] != "default" || !slices.Contains(node.Finalizers, v1.TerminationFinalizer) {
		t.Errorf("node labels %v, finalizers %v: want the claim's labels, registered=true and the termination finalizer", node.Labels, node.Finalizers)
	}
}
