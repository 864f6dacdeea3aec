package provisioning

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
	"github.com/joist-dev/joist/cloudprovider/kwok"
	"github.com/joist-dev/joist/controllers/nomination"
	"github.com/joist-dev/joist/controllers/state"
)

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// testProvisioner is a provisioner on a real apiserver (through kube), driven by calling Provision,
// with a fake clock for its backoffs.
func testProvisioner(kube client.Client) (*Provisioner, *clocktesting.FakeClock, *events.FakeRecorder) {
	clk := clocktesting.NewFakeClock(time.Now())
	cloud := kwok.New(kube, cloudprovider.NewUnavailableOfferings(clk, 0), kwok.Options{InstanceTypes: catalog.Default()})
	rec := events.NewFakeRecorder(100000)
	noms := nomination.New(kube, nil, state.NewNominations(), func() {}, clk, nomination.DefaultOptions())
	return New(kube, nil, cloud, noms, rec, clk, DefaultOptions()), clk, rec
}

// readyPool creates a Ready NodePool (no controller runs to set the condition).
func readyPool(t *testing.T, ctx context.Context, kube client.Client, name string, weight int32, labels map[string]string) *v1.NodePool {
	t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Weight = &weight
	np.Spec.Template.Labels = labels
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
	if err := kube.Create(ctx, np); err != nil {
		t.Fatalf("creating nodepool %s: %v", name, err)
	}
	np.SetCondition(v1.ConditionTypeReady, metav1.ConditionTrue, "Test", "")
	if err := kube.Status().Update(ctx, np); err != nil {
		t.Fatalf("marking nodepool %s ready: %v", name, err)
	}
	return np
}

// pendingPods creates n pods of 1 cpu the kube-scheduler has not tried yet (none runs here).
func pendingPods(t *testing.T, ctx context.Context, kube client.Client, prefix string, n int, selector map[string]string) {
	t.Helper()
	for i := 0; i < n; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Image: "x",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
		if err := kube.Create(ctx, pod); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
	}
}

func claimsOf(t *testing.T, ctx context.Context, kube client.Reader, pool string) []v1.NodeClaim {
	t.Helper()
	var list v1.NodeClaimList
	if err := kube.List(ctx, &list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
