package garbagecollection_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider"
	awsprovider "github.com/joist-dev/joist/cloudprovider/aws"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
	"github.com/joist-dev/joist/controllers/garbagecollection"
)

// TestSweepOnEC2 runs one sweep over an EC2 account (the HTTP fake, through the real SDK) holding
// a leaked instance, a young leaked instance, a claim whose instance was terminated outside Joist,
// and Nodes whose instances are gone.
func TestSweepOnEC2(t *testing.T) {
	s := fake.NewStandard("prod")
	defer s.Close()
	ctx := context.Background()
	clients, err := s.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clk := clocktesting.NewFakeClock(now.Add(time.Hour))
	tags := func(claim string) map[string]string {
		return map[string]string{"kubernetes.io/cluster/prod": "owned", "karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": claim}
	}
	leaked := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2a", Tags: tags("crashed-before-status"), LaunchTime: now})
	young := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2a", Tags: tags("just-launched"), LaunchTime: now.Add(time.Hour - 5*time.Second)})
	owned := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2a", Tags: tags("alive"), LaunchTime: now})
	// A relaunch that did not see the first instance: tagged for the same claim, not the one its
	// providerID names.
	duplicate := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2b", Tags: tags("alive"), LaunchTime: now})
	// A claim whose status write has not happened yet keeps the instance tagged for it.
	launching := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2b", Tags: tags("launching"), LaunchTime: now})
	gone := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2b", Tags: tags("gone"), LaunchTime: now})
	s.TerminateOutOfBand(gone)
	orphanNodeInstance := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2c", Tags: tags("deleted-claim"), LaunchTime: now})
	s.TerminateOutOfBand(orphanNodeInstance)

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1.AddToScheme(scheme)
	_ = awsv1.AddToScheme(scheme)
	claim := func(name, pid string) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now)}}
		nc.Status.ProviderID = pid
		nc.SetCondition(v1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "")
		return nc
	}
	node := func(name, pid string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(now)}, Spec: corev1.NodeSpec{ProviderID: pid}}
	}
	joist := map[string]string{v1.NodePoolLabelKey: "default"}
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(
		claim("alive", "aws:///us-west-2a/"+owned), claim("gone", "aws:///us-west-2b/"+gone), claim("launching", ""),
		node("ip-10-0-3-1.us-west-2.compute.internal", "aws:///us-west-2c/"+orphanNodeInstance, joist),
		node("ip-10-0-3-2.us-west-2.compute.internal", "aws:///us-west-2c/i-0notjoist", nil),
		node("ip-10-0-1-1.us-west-2.compute.internal", "aws:///us-west-2a/"+owned, joist),
	).Build()
	provider := awsprovider.New(kube, clients, cloudprovider.NewUnavailableOfferings(clk, 0), clk, awsprovider.Options{ClusterName: "prod"})
	gc := garbagecollection.New(kube, nil, provider, clk, garbagecollection.Options{Period: time.Minute, MinAge: 30 * time.Second})
	if err := gc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, inst := range s.Instances() {
		states[inst.ID] = inst.State
	}
	if states[leaked] != "terminated" {
		t.Errorf("leaked instance is %s, want terminated", states[leaked])
	}
	if states[young] != "running" || states[owned] != "running" || states[launching] != "running" {
		t.Errorf("young instance %s, owned instance %s, instance of a claim not yet recorded %s; want all running", states[young], states[owned], states[launching])
	}
	if states[duplicate] != "terminated" {
		t.Errorf("duplicate instance tagged for a claim whose providerID names another is %s, want terminated", states[duplicate])
	}
	exists := func(obj client.Object, name string) bool {
		err := kube.Get(ctx, client.ObjectKey{Name: name}, obj)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if exists(&v1.NodeClaim{}, "gone") {
		t.Errorf("nodeclaim gone (instance terminated outside Joist) still exists")
	}
	if !exists(&v1.NodeClaim{}, "alive") {
		t.Errorf("nodeclaim alive was deleted")
	}
	if exists(&corev1.Node{}, "ip-10-0-3-1.us-west-2.compute.internal") {
		t.Errorf("Joist node without claim whose instance is gone still exists")
	}
	if !exists(&corev1.Node{}, "ip-10-0-3-2.us-west-2.compute.internal") || !exists(&corev1.Node{}, "ip-10-0-1-1.us-west-2.compute.internal") {
		t.Errorf("a node not launched by Joist, or one with a live instance, was deleted")
	}
}
