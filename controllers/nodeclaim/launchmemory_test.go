package nodeclaim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	cpmetrics "github.com/joist-dev/joist/cloudprovider/metrics"
	"github.com/joist-dev/joist/controllers/nodeclaim"
)

// A launch result is remembered only until the claim as read shows it (Launched, Registered, the
// instance's labels): after a burst of launches the records stayed until the next launch, as
// apimachinery's Expiring drops expired entries only on a later Set (~2 MB of live heap at 1,000
// claims in make bench-scale's settle window). What is remembered is the launch's metadata and
// status, not a copy of the claim's spec.
func TestLaunchRecordIsForgottenOnceTheClaimShowsIt(t *testing.T) {
	ctx := context.Background()
	nc := launchClaim("default-rec")
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
	nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	kube := newClient(nc)
	c := nodeclaim.New(unseenNodes{kube}, nodeCreatingCloud{kube: kube}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	c.SetLive(kube)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	rec := c.LaunchRecord(nc.UID)
	if rec == nil {
		t.Fatal("no launch remembered right after the launch: a stale read could launch again")
	}
	if rec.Status.ProviderID == "" || rec.Status.NodeName != nc.Name || rec.Labels[v1.LabelInstanceType] != "m5.large" {
		t.Errorf("launch record %+v: want the instance's provider ID, node name and labels", rec)
	}
	if len(rec.Spec.Requirements) != 0 || len(rec.Spec.Resources.Requests) != 0 || len(rec.Finalizers) != 0 {
		t.Errorf("launch record keeps the claim's spec or metadata (requirements %v, requests %v, finalizers %v): only the launch's own fields are read again",
			rec.Spec.Requirements, rec.Spec.Resources.Requests, rec.Finalizers)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || !got.IsTrue(v1.ConditionTypeRegistered) {
		t.Fatalf("claim not Registered by its launch's reconcile (err %v)", err)
	}
	// The status write's event: the claim as read now shows everything the record carried.
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := c.LaunchRecords(); n != 0 {
		t.Errorf("%d launch records after the cache showed the claim Launched and Registered, want 0", n)
	}
}

// A deleted claim's launch record goes with it.
func TestDeletedClaimForgetsItsLaunch(t *testing.T) {
	ctx := context.Background()
	nc := launchClaim("default-del")
	kube := newClient(nc)
	c := nodeclaim.New(unseenNodes{kube}, goneCloud{nodeCreatingCloud{kube: kube}}, nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
	c.SetLive(kube)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, nc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := c.LaunchRecords(); n != 0 {
		t.Errorf("%d launch records after the claim was deleted, want 0", n)
	}
}

// goneCloud has terminated every instance.
type goneCloud struct{ nodeCreatingCloud }

func (goneCloud) Delete(context.Context, *v1.NodeClaim) error {
	return cloudprovider.NewNodeClaimNotFoundError(errors.New("terminated"))
}

// writingCloud launches as KWOK does (it creates the Node and names it) and keeps the Node it
// wrote until the lifecycle takes it, as kwok.CloudProvider does.
type writingCloud struct {
	nodeCreatingCloud
	written map[string]*corev1.Node
}

func (c *writingCloud) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	out, err := c.nodeCreatingCloud.Create(ctx, nc)
	if err != nil {
		return nil, err
	}
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: out.Status.NodeName}, node); err != nil {
		return nil, err
	}
	c.written[node.Name] = node
	return out, nil
}

func (c *writingCloud) Name() string { return "writing" }

func (c *writingCloud) WrittenNode(name string) *corev1.Node {
	n := c.written[name]
	delete(c.written, name)
	return n
}

// noReads fails the test on any read: the lifecycle must register from the provider's copy.
type noReads struct {
	client.Reader
	t *testing.T
}

func (r noReads) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	r.t.Errorf("read %s from the apiserver: the provider kept the Node it wrote", key.Name)
	return nil
}

// The provider's copy of the Node it wrote is found through the metrics decorator the manager
// wraps every provider in, and taken whether or not the cache shows the Node already. Before, the
// plain type assertion on the decorator never found it: every launch read its Node back from the
// apiserver, and every Node KWOK wrote stayed in the provider until it expired (and, after the last
// launch, until the next one: ~3 MB at 1,000 nodes in make bench-scale's settle window).
func TestWrittenNodeIsTakenThroughTheDecorator(t *testing.T) {
	for _, cacheShowsNode := range []bool{false, true} {
		ctx := context.Background()
		nc := launchClaim("default-w")
		nc.CreationTimestamp = metav1.Now()
		kube := newClient(nc)
		cloud := &writingCloud{nodeCreatingCloud: nodeCreatingCloud{kube: kube}, written: map[string]*corev1.Node{}}
		var cached client.Client = unseenNodes{kube}
		if cacheShowsNode {
			cached = kube
		}
		c := nodeclaim.New(cached, cpmetrics.Decorate(cloud), nil, events.NewFakeRecorder(10), clocktesting.NewFakeClock(time.Now()), nodeclaim.DefaultOptions())
		c.SetLive(noReads{kube, t})
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatal(err)
		}
		got := &v1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil || !got.IsTrue(v1.ConditionTypeRegistered) {
			t.Fatalf("cache shows the node %v: claim not Registered in its launch's reconcile (err %v)", cacheShowsNode, err)
		}
		if len(cloud.written) != 0 {
			t.Errorf("cache shows the node %v: the provider still holds %d written Nodes after the claim registered, want 0", cacheShowsNode, len(cloud.written))
		}
	}
}
