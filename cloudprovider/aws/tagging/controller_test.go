package tagging_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cloudprovider/aws/fake"
	"github.com/joist-dev/joist/cloudprovider/aws/tagging"
)

func TestRegisteredInstanceIsNamedAfterItsNode(t *testing.T) {
	s := fake.NewStandard("prod")
	defer s.Close()
	ctx := context.Background()
	clients, err := s.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := s.AddInstance(fake.Instance{InstanceType: "m5.large", Zone: "us-west-2a", Tags: map[string]string{"Name": "default-abc12"}})
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc12"}}
	nc.Status.ProviderID, nc.Status.NodeName = "aws:///us-west-2a/"+id, "ip-10-0-1-17.us-west-2.compute.internal"
	nc.SetCondition(v1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", "")
	scheme := runtime.NewScheme()
	_ = v1.AddToScheme(scheme)
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nc).Build()
	c := tagging.New(kube, clients.EC2)
	for i := 0; i < 2; i++ {
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Instances()[0].Tags["Name"]; got != nc.Status.NodeName {
		t.Errorf("instance Name tag = %q, want the node name", got)
	}
	if n := len(s.Calls("CreateTags")); n != 1 {
		t.Errorf("CreateTags calls = %d, want 1 (the annotation makes it once)", n)
	}
	got := &v1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil || got.Annotations[tagging.AnnotationTagged] != "true" {
		t.Errorf("claim annotations = %v (%v)", got.Annotations, err)
	}
}
