package kwok_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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

// List (the garbage collector's sweep, every 30 s) reads the cached nodes without deep-copying
// them: the copies were 29 MB of the heap at the 50,000-pod / 5,000-node peak of make bench-scale.
func TestListDoesNotDeepCopyTheNodes(t *testing.T) {
	const n = 200
	e := env.New(t, env.Options{})
	ctx, _, cached := e.StartTestCache(t, cache.Options{}, nil)
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-%03d", i), Labels: map[string]string{
			kwok.ManagedLabelKey: "c-2x-amd64-linux", "node.kubernetes.io/instance-type": "c-2x-amd64-linux", "topology.kubernetes.io/zone": "zone-a",
			"karpenter.sh/capacity-type": "on-demand", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "team": "a", "tier": "b",
		}, Annotations: map[string]string{"note": "x", kwok.ImageIDAnnotationKey: "img"}},
			Spec: corev1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + fmt.Sprintf("kwok-%03d", i),
				Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoSchedule}}}}
		if err := e.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		node.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OSImage: "kwok", Architecture: "amd64", OperatingSystem: "linux"},
		}
		if err := e.Client.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
	}
	cloud := newCloud(cached)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		instances, err := cloud.List(ctx)
		return err == nil && len(instances) == n, nil
	}); err != nil {
		t.Fatalf("the cache never showed the %d nodes", n)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	instances, err := cloud.List(ctx)
	runtime.ReadMemStats(&after)
	if err != nil || len(instances) != n || instances[0].Status.ProviderID == "" {
		t.Fatalf("listed %d instances (%v), want %d with provider ids", len(instances), err, n)
	}
	perNode := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated per node listed", perNode)
	if perNode > 5000 { // 7,957 with a deep copy of each node, 3,179 without
		t.Errorf("listing allocated %.0f bytes per node; want at most 5,000 (no deep copy of the cached nodes)", perNode)
	}
}
