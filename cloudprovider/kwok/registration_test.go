package kwok_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwokv1alpha1 "github.com/joist-dev/joist/api/kwok/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/kwok"
	"github.com/joist-dev/joist/test/env"
)

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func newCloud(kube client.Client) *kwok.CloudProvider {
	return kwok.New(kube, cloudprovider.NewUnavailableOfferings(clock.RealClock{}, 0), kwok.Options{InstanceTypes: catalog.Default()})
}

func claim(name string) *v1.NodeClaim {
	return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeClaimSpec{
		Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
			{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		},
		NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.GroupVersion.Group, Kind: "KWOKNodeClass", Name: "slow"},
	}}
}

// An instance launched with a registration delay by a manager that then crashes (its memory gone)
// is neither lost nor launched twice: a new manager finds it, and its Node registers on time.
func TestBootingInstanceSurvivesManagerCrash(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "img", RegistrationDelay: &metav1.Duration{Duration: 2 * time.Second}}}
	if err := e.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	before := newCloud(e.Client)
	launched, err := before.Create(ctx, claim("a"))
	if err != nil {
		t.Fatalf("launching: %v", err)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "a"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node registered before its delay (err %v)", err)
	}
	// The first manager dies here, before the delay ends; a new one starts with empty memory.
	after := newCloud(e.Client)
	got, err := after.Get(ctx, launched.Status.ProviderID)
	if err != nil {
		t.Fatalf("a booting instance must be found after a restart: %v", err)
	}
	if got.Labels[v1.LabelInstanceType] != launched.Labels[v1.LabelInstanceType] {
		t.Errorf("instance type %q after restart, launched %q", got.Labels[v1.LabelInstanceType], launched.Labels[v1.LabelInstanceType])
	}
	again, err := after.Create(ctx, claim("a"))
	if err != nil {
		t.Fatalf("relaunching after restart: %v", err)
	}
	if again.Status.ProviderID != launched.Status.ProviderID {
		t.Errorf("relaunch returned %s, want the instance launched before the crash %s", again.Status.ProviderID, launched.Status.ProviderID)
	}
	if list, err := after.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("List after restart: %d instances (err %v), want 1", len(list), err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = after.Start(runCtx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		node := &corev1.Node{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: "a"}, node)
		if err == nil {
			if node.Spec.ProviderID != launched.Status.ProviderID {
				t.Errorf("node provider id %s, want %s", node.Spec.ProviderID, launched.Status.ProviderID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node of the booting instance never registered after the restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Registration creates the Node first and deletes the booting record right after: wait for
	// the second step instead of reading the record the moment the Node appears.
	deadline = time.Now().Add(30 * time.Second)
	for {
		err := e.Client.Get(ctx, client.ObjectKey{Name: "a"}, &kwokv1alpha1.KWOKInstance{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the booting record must go once the node registered (err %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Terminating a booting instance means its Node never registers.
func TestDeleteBootingInstance(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "img", RegistrationDelay: &metav1.Duration{Duration: time.Second}}}
	if err := e.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	cloud := newCloud(e.Client)
	launched, err := cloud.Create(ctx, claim("b"))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Status.NodeName != "" {
		t.Errorf("a booting instance's launch names Node %q, which does not exist yet", launched.Status.NodeName)
	}
	if err := cloud.Delete(ctx, launched); err != nil {
		t.Fatalf("terminating a booting instance: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = cloud.Start(runCtx) }()
	time.Sleep(2 * time.Second)
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "b"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a terminated booting instance registered a node (err %v)", err)
	}
	if err := cloud.Delete(ctx, launched); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second delete: %v, want not found", err)
	}
}

// Without a registration delay the launch creates the Node and names it, so the lifecycle can
// register it at once rather than wait for its cache to show it.
func TestLaunchNamesTheNodeItCreated(t *testing.T) {
	e := env.New(t, env.Options{})
	ctx := context.Background()
	if err := e.Client.Create(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"},
		Spec: kwokv1alpha1.KWOKNodeClassSpec{ImageID: "img"}}); err != nil {
		t.Fatal(err)
	}
	launched, err := newCloud(e.Client).Create(ctx, claim("c"))
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: launched.Status.NodeName}, node); err != nil || node.Spec.ProviderID != launched.Status.ProviderID {
		t.Fatalf("launch named Node %q (err %v, provider ID %q), want the Node with provider ID %s", launched.Status.NodeName, err, node.Spec.ProviderID, launched.Status.ProviderID)
	}
}
